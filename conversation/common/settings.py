"""Settings the conversation package needs, as pydantic models.

They live here rather than in ``bot/`` because ``conversation/`` must stand on its own (tests and
the replay tools use it without the bot); ``bot.config.schema`` composes them into the full config
file.
Every field has the default documented in the repository's ``config.toml``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, IPvAnyNetwork, model_validator


class StrictSection(BaseModel):
    """Base for a config section: unknown keys are errors, so a typo never silently falls back."""

    # inf and nan are no setting: every float is finite (TOML can spell both).
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False
    )


# A Discord id (user, role, channel): a positive 64-bit snowflake; 0, -1 or 10**30 are typos.
# Every section takes ids as this one type, so an error line can tell an id key from others.
Snowflake = Annotated[int, Field(ge=1, le=2**63 - 1)]


DEFAULT_SUMMARY_PROMPT = (
    "You keep the running summary of a Discord conversation whose oldest messages no longer "
    "fit the chat model's window. Rewrite the summary so far (if any) together with the "
    "messages given into one summary, in the language of the conversation: who asked what, "
    "what was decided or answered, what is still open, and names, numbers, links and code "
    "that later messages may refer to. Attribute statements to the people who made them. "
    "Write plain prose or short bullet points, no preamble, and nothing that was not said."
)


# The cap on a context, and how far it grows in a channel whose conversations run long when
# ``max_total_long`` is unset (``ContextSettings.longest_total``): 120 lifted mediawiki's long
# conversations most on irc-train (docs/experiments.md).
DEFAULT_MAX_TOTAL = 50
DEFAULT_MAX_TOTAL_LONG = 120


class ContextSettings(StrictSection):
    """Thresholds of the tik/tok context builder."""

    min_linear: int = Field(1, ge=0, le=1000, description="Recent messages always included.")
    max_total: int = Field(
        DEFAULT_MAX_TOTAL,
        ge=1,
        le=1000,
        description="Cap on messages in a context (a channel whose conversations run long may "
        "get more: max_total_long).",
    )
    max_total_long: int | None = Field(
        None,
        ge=1,
        le=1000,
        description="The cap in a channel whose conversations run long: past max_total, up to "
        "this, as far as the channel's recent contexts asked for. Unset: up to 120 while "
        "max_total is the default 50 and the score reads meaning (the meaning extra), no "
        "growth otherwise; at most max_total: one cap everywhere.",
    )
    time_threshold_minutes: float = Field(
        30,
        gt=0,
        le=525_600,
        description="A silence longer than this seals a direction of history.",
        json_schema_extra={"bound_note": "a year"},
    )
    participants_only: bool = Field(
        True,
        description="Temporal exploration links only messages by people taking part in the "
        "conversation (false: every neighbour, as the original design).",
    )
    small_group_size: int = Field(
        3,
        ge=0,
        le=1000,
        description="When at most this many people spoke in the recent messages, they all take "
        "part in the conversation, mentions or not.",
    )
    follow_mentions: bool = Field(
        True, description="A message mentioning someone is linked to that person's latest message."
    )
    mention_scan_limit: int = Field(
        200,
        ge=0,
        le=10_000,
        description="How many messages back to look for a mentioned person's message.",
    )
    neighbour_scan_limit: int = Field(
        200,
        ge=1,
        le=10_000,
        description="How many other conversations' messages a temporal step may skip.",
    )
    learned_relevance: bool = Field(
        True,
        description="A learned score decides which candidates enter and in what order (false: "
        "the participation rules alone).",
    )
    relevance_threshold: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Lowest score a candidate needs to enter; unset = the fitted default. "
        "Higher = more precise, lower = fuller contexts.",
    )
    candidate_window: int = Field(
        99,
        ge=1,
        le=1000,
        description="How many messages before the trigger the score considers even if they "
        "must be read from Discord (99 fit in the history page the recent messages already "
        "cost). Past it, a second page (up to cached_candidate_window) is read only when the "
        "conversation reaches the first page's edge.",
    )
    cached_candidate_window: int = Field(
        199,
        ge=1,
        le=1000,
        description="How many messages before the trigger the score may consider: all of them "
        "when the channel's cache holds them (the bot saw them arrive); past candidate_window, "
        "a history page is fetched for them only when the conversation reaches the first "
        "page's edge (one of its oldest messages entered the context). Equal to "
        "candidate_window (or less): never past it.",
    )
    summarize: bool = Field(
        True,
        description="When a long conversation is cut, the model summarizes what falls out; the "
        "summary follows the system prompt, unchanged until the next cut (false: a plain cut).",
    )
    summary_tokens: int = Field(
        400,
        ge=50,
        le=8000,
        description="The most tokens a summary may have (counted in the budget).",
    )
    summary_model: str | None = Field(
        None,
        description="A [models.NAME] that writes the summaries (a cheaper one); unset: the "
        "channel's model.",
    )
    summary_timeout_seconds: float = Field(
        30.0,
        gt=0,
        le=600,
        description="How long the answer at a cut waits for the summary; then a plain cut.",
        json_schema_extra={"bound_note": "10 minutes"},
    )
    summary_prompt: str = Field(
        DEFAULT_SUMMARY_PROMPT,
        min_length=1,
        description="The instructions the summary is written with (the system prompt of the "
        "summary request).",
    )

    @property
    def walk_reach(self) -> int:
        """How far back the walk may go when the cache holds everything: a smaller
        ``cached_candidate_window`` never cuts short what a history page may be read for."""
        return max(self.candidate_window, self.cached_candidate_window)

    @property
    def longest_total(self) -> int:
        """How far the cap may grow in a channel whose conversations run long. Unset, it grows
        only from the default ``max_total``: an operator who chose a cap (the studio's 2, a
        support channel's 12) keeps it unless they also set ``max_total_long``."""
        if self.max_total_long is not None:
            return self.max_total_long
        if self.max_total == DEFAULT_MAX_TOTAL:
            return DEFAULT_MAX_TOTAL_LONG
        return self.max_total

    @model_validator(mode="after")
    def _linear_fits(self) -> ContextSettings:
        if self.min_linear > self.max_total:
            written = self.model_fields_set
            raise ValueError(_linear_conflict(self.min_linear, self.max_total, written))
        return self


def _linear_conflict(min_linear: int, max_total: int, written: set[str]) -> str:
    """Blame the key the operator wrote, and say which value is a default they never set."""

    def value(key: str, number: int) -> str:
        return f"{key} = {number}" + ("" if key in written else " (the default)")

    if "max_total" in written and "min_linear" not in written:
        return (
            f"max_total: must be at least min_linear ({value('max_total', max_total)} < "
            f"{value('min_linear', min_linear)}); lower min_linear too"
        )
    return (
        f"min_linear: must not exceed max_total ({value('min_linear', min_linear)} > "
        f"{value('max_total', max_total)})"
    )


class ArticleSettings(StrictSection):
    """Fetching and extracting linked articles (see ``conversation.articles``)."""

    enabled: bool = True
    allow_private_networks: bool = Field(
        False,
        description="Allow fetching from loopback/private/link-local addresses. Keep off: SSRF.",
    )
    timeout_seconds: float = Field(
        10.0,
        gt=0,
        le=300,
        description="Total time for one page, redirects included (default 10).",
        json_schema_extra={"bound_note": "5 minutes"},
    )
    max_bytes: int = Field(
        2_000_000,
        gt=0,
        le=100_000_000,
        description="Download cap per page, decompressed (default 2 MB).",
        json_schema_extra={"bound_note": "100 MB"},
    )
    allowed_networks: tuple[IPvAnyNetwork, ...] = Field(
        (),
        description="Private networks reachable all the same (an intranet wiki), as CIDR strings; "
        "default none.",
    )
    max_redirects: int = Field(
        5,
        ge=0,
        le=20,
        description="Redirect hops followed, each re-checked by the address policy.",
    )
    max_chars: int = Field(
        20_000,
        ge=100,
        le=1_000_000,
        description="Article text kept per link; longer text is cut and marked.",
    )
    max_urls_per_message: int = Field(3, ge=0, le=100, description="Links read from one message.")
    max_urls_per_context: int = Field(
        10, ge=0, le=100, description="Links read for one whole context."
    )
    max_concurrent_fetches: int = Field(
        10, ge=1, le=100, description="Pages downloaded at once, across all contexts (default 10)."
    )
    cache_max_entries: int = Field(
        256, ge=1, le=100_000, description="Results kept in the cache (LRU)."
    )
    cache_ttl_seconds: float = Field(
        3600.0,
        gt=0,
        le=2_592_000,
        description="How long an extracted article is reused (default 1 h).",
        json_schema_extra={"bound_note": "30 days"},
    )
    failure_ttl_seconds: float = Field(
        300.0,
        ge=0,
        le=86_400,
        description="How long a failure is reused before the link is tried again.",
        json_schema_extra={"bound_note": "a day"},
    )
    extract_workers: Literal["process", "thread"] = Field(
        "process",
        description="Where goose3 runs: 'process' never stalls the event loop; 'thread' uses "
        "less memory but the GIL can stall the loop ~100 ms on a 1 MB page.",
    )
    extract_max_workers: int = Field(2, ge=1, le=32, description="goose3 workers (default 2).")
    extract_timeout_seconds: float = Field(
        15.0,
        gt=0,
        le=300,
        description="Time allowed for extracting one page (default 15).",
        json_schema_extra={"bound_note": "5 minutes"},
    )
    user_agent: str = Field(
        "Mozilla/5.0 (compatible; threadwise/0.1; +article reader)",
        min_length=1,
        description="User-Agent sent when fetching pages.",
    )


class CacheSettings(StrictSection):
    """How many Discord messages the bot keeps in memory (a cached message costs no REST call
    when it turns up in a context)."""

    max_messages: int = Field(
        200_000,
        ge=1,
        le=10_000_000,
        description="Messages held across all channels; the least recently used channels give "
        "way first. The bot's caches are the only ones (nextcord's own holds none).",
    )
    max_messages_per_channel: int = Field(
        5000, ge=1, le=1_000_000, description="Messages held per channel."
    )
    max_channels: int = Field(500, ge=1, le=1_000_000, description="Channels with a cache.")
    max_prompt_bytes: int = Field(
        64 * 1024 * 1024,
        ge=1024 * 1024,
        le=64 * 1024**3,
        description="Bytes of the requests remembered in memory for their follow-ups, across "
        "channels; past it the oldest are forgotten (a follow-up then reads the store's copy).",
        json_schema_extra={"bound_note": "1 MiB to 64 GiB"},
    )


class FollowSettings(StrictSection):
    """Following: answering, without a mention, a message that continues the bot's conversation
    (the ``Follower`` of ``conversation.selection``). Not a section of its own: ``[triggers]``
    (``bot.config.schema.TriggerSettings``) holds these keys beside its others, and the
    ``Follower`` reads them from it as they are."""

    follow: bool = Field(
        True,
        description="After answering in a channel, answer follow-ups there without a mention "
        "when they continue the bot's conversation (see conversation.selection.follower).",
    )
    follow_minutes: float = Field(
        30.0, gt=0, le=1440, description="How long after its last answer the bot follows."
    )
    follow_threshold: float | None = Field(
        None, ge=0, le=1, description="Score that makes a follow-up answered; unset: fitted."
    )
    follow_off_channels: tuple[Snowflake, ...] = Field(
        (), description="Channels (or threads' parents) where the bot never follows."
    )
