"""What the article pipeline hands back: one ``ArticleResult`` per link, success or failure.

A failed link must never cost the reply, but it must not vanish either: the operator asks "why did
the bot ignore my link?", so every failure carries a status the code can branch on and a reason a
person can read. Inside the pipeline a failure travels as ``ArticleFailure`` and is turned into a
result at the service boundary.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator


class ArticleStatus(StrEnum):
    """Outcome of one link. Everything but ``OK`` means "no embedding for this link"."""

    OK = "ok"
    SKIPPED = "skipped"  # disabled, or over a per-message / per-context limit
    INVALID_URL = "invalid_url"  # not http(s), credentials in it, unparsable
    BLOCKED = "blocked"  # the address policy (SSRF guard) refused the destination
    TIMEOUT = "timeout"
    CONNECTION_ERROR = "connection_error"
    HTTP_ERROR = "http_error"  # a non-2xx answer
    TOO_MANY_REDIRECTS = "too_many_redirects"
    TOO_LARGE = "too_large"
    NOT_HTML = "not_html"
    EXTRACT_ERROR = "extract_error"  # goose3 raised, or its worker died
    EMPTY = "empty"  # extraction found no article text
    ERROR = "error"  # a bug of ours; logged with its traceback


class ArticleFailure(Exception):
    """Why one link produced no article; raised inside the pipeline, caught by the service."""

    def __init__(self, status: ArticleStatus, reason: str) -> None:
        super().__init__(f"{status}: {reason}")
        self.status = status
        self.reason = reason


def utc_now() -> datetime:
    return datetime.now(UTC)


class ArticleResult(BaseModel):
    """The outcome for one requested URL, as kept in the cache and shown to the materializer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(description="The URL as requested (the key of ``fetch_many``'s answer).")
    status: ArticleStatus
    reason: str = Field("", description="Why it failed or was skipped; empty when ok.")
    final_url: str | None = Field(None, description="Where the redirects ended, when fetched.")
    title: str = ""
    text: str = Field("", description="Article text, already cut to ``max_chars``.")
    truncated: bool = False
    original_chars: int = Field(0, ge=0, description="Length of the text before truncation.")
    fetched_at: AwareDatetime = Field(default_factory=utc_now)

    @property
    def ok(self) -> bool:
        return self.status is ArticleStatus.OK

    @model_validator(mode="after")
    def _consistent(self) -> ArticleResult:
        if self.ok and not self.text:
            raise ValueError("an ok article needs text")
        if not self.ok and not self.reason:
            raise ValueError(f"a {self.status} result needs a reason")
        return self

    @classmethod
    def failed(cls, url: str, failure: ArticleFailure) -> ArticleResult:
        return cls(url=url, status=failure.status, reason=failure.reason)
