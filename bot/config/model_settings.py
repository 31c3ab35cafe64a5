"""The ``[model]`` section of ``config.toml``: which model endpoint answers, and how.

Kept apart from ``bot.config.schema`` so the model client and its tests need nothing else;
the config loader composes it (and lets the ``MODEL_API_KEY`` environment variable win over the
file).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from bot.config.validators import HttpUrl, OptionalSecret
from conversation.common import StrictSection

# No {now} here: a prompt that starts the same way every time lets the model server reuse
# what it already read (its prompt cache); the time travels with the message answered.
DEFAULT_SYSTEM_PROMPT = (
    "You are {bot_name}, a helpful assistant chatting on the Discord server {server}, "
    "in #{channel}. Several people may be talking at once: each message is labelled with its "
    "author, answer the one who addressed you. The message you answer ends with the time it "
    "was sent, which is the current time. Be concise and use Discord markdown."
)
# The model client's connection: read once when the client opens (a change needs a restart).
CONNECTION_KEYS = ("provider", "base_url", "api_key", "extra_headers", "connect_timeout_seconds")
PERSONA_PLACEHOLDERS = ("bot_name", "server", "channel", "now")
PLACEHOLDER = re.compile(r"\{(\w+)\}")
MAX_TOKENS = 100_000_000  # far past any model's window, and still a number every counter takes


class ModelSettings(StrictSection):
    """Endpoint, sampling and robustness knobs of the chat model.

    ``provider = "openai"``: any server speaking the OpenAI ``/chat/completions`` protocol
    (Ollama, the default address, llama.cpp's server, vLLM, OpenRouter, OpenAI itself);
    ``provider = "anthropic"``: Anthropic's Messages API, natively (prompt caching included).
    """

    provider: Literal["openai", "anthropic"] = Field(
        "openai", description="Which API the endpoint speaks."
    )
    base_url: HttpUrl = Field(
        "http://127.0.0.1:11434/v1",
        min_length=1,
        description="Base URL of the OpenAI-compatible API, up to and including /v1.",
    )
    api_key: OptionalSecret = Field(
        None, description="Bearer token; the MODEL_API_KEY environment variable wins over this."
    )
    name: str = Field("llama3.1", min_length=1, description="Model name sent in each request.")
    use: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_-]{1,40}$",
        description="Answer with the endpoint of this [models.NAME] table instead of provider, "
        "base_url, api_key, name and context_tokens here.",
    )
    temperature: float | None = Field(
        None, ge=0, le=2, description="Sampling temperature (0..2); unset: not sent."
    )
    max_tokens: int | None = Field(
        None,
        gt=0,
        le=MAX_TOKENS,
        description="Cap on answer tokens; unset: not sent (anthropic: reserve_tokens).",
    )
    top_p: float | None = Field(None, gt=0, le=1, description="Nucleus sampling; unset: not sent.")
    top_k: int | None = Field(
        None, gt=0, le=1_000_000, description="Top-k sampling; unset: not sent."
    )
    presence_penalty: float | None = Field(None, ge=-2, le=2, description="openai only.")
    frequency_penalty: float | None = Field(None, ge=-2, le=2, description="openai only.")
    seed: int | None = Field(
        None,
        ge=-(2**63),
        le=2**63 - 1,
        description="openai only: reproducible sampling.",
        json_schema_extra={"bound_note": "a 64-bit integer"},
    )
    stop: list[str] | None = Field(None, description="Stop sequences; unset: not sent.")
    extra_headers: dict[str, SecretStr] = Field(
        default_factory=dict, description="HTTP headers added to each request (kept secret)."
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="JSON fields added to each request body as they are."
    )
    system_prompt: str = Field(
        DEFAULT_SYSTEM_PROMPT,
        description="Persona; may use {bot_name}, {server}, {channel} and {now} (best "
        "left out: a prompt that changes at its start defeats the server's prompt cache).",
    )
    stream: bool = Field(True, description="Stream the answer (messages update as it is written).")
    timeout_seconds: float = Field(
        300.0,
        gt=0,
        le=3600,
        description="Total time for one answer, retries and waits included.",
        json_schema_extra={"bound_note": "an hour"},
    )
    connect_timeout_seconds: float = Field(
        10.0,
        gt=0,
        le=300,
        description="Time allowed to open the TCP/TLS connection.",
        json_schema_extra={"bound_note": "5 minutes"},
    )
    idle_timeout_seconds: float = Field(
        120.0,
        gt=0,
        le=3600,
        json_schema_extra={"bound_note": "an hour"},
        description="Streaming only: longest silence from the server (before the first token "
        "too, so it must cover loading the model and reading the prompt).",
    )
    max_retries: int = Field(
        3, ge=0, le=100, description="Extra attempts after a connection error, 408, 429 or 5xx."
    )
    retry_base_seconds: float = Field(
        1.0,
        ge=0,
        le=3600,
        description="First backoff delay; doubles each retry, with jitter.",
        json_schema_extra={"bound_note": "an hour"},
    )
    retry_max_seconds: float = Field(
        30.0,
        ge=0,
        le=3600,
        description="Cap on one backoff delay, including a server's Retry-After.",
        json_schema_extra={"bound_note": "an hour"},
    )
    vision: bool = Field(False, description="Send images as image parts (the model must see).")
    context_tokens: int = Field(
        8192,
        ge=256,
        le=MAX_TOKENS,
        json_schema_extra={"bound_note": "100 million tokens"},
        description="The model's context window in tokens (prompt and answer together); the "
        "prompt is cut to fit it. On Ollama, set the model's num_ctx to the same value.",
    )
    reserve_tokens: int = Field(
        1024,
        gt=0,
        le=MAX_TOKENS,
        description="Tokens kept free for the answer when max_tokens is unset (not sent, but "
        "for anthropic, which requires a cap).",
    )

    @model_validator(mode="after")
    def _answer_fits(self) -> ModelSettings:
        # Raised as "key: problem" so the config loader can name the key.
        key = "max_tokens" if self.max_tokens is not None else "reserve_tokens"
        if self.answer_reserve >= self.context_tokens:
            raise ValueError(
                f"{key}: {self.answer_reserve} leaves no room for the prompt in context_tokens="
                f"{self.context_tokens}; make it smaller than context_tokens"
            )
        return self

    @property
    def answer_reserve(self) -> int:
        """Tokens of the window kept for the answer: ``max_tokens``, else ``reserve_tokens``."""
        return self.max_tokens if self.max_tokens is not None else self.reserve_tokens

    @model_validator(mode="before")
    @classmethod
    def _anthropic_address(cls, data: Any) -> Any:
        """Anthropic's own address when the provider is switched but no base_url is given."""
        if (
            isinstance(data, dict)
            and data.get("provider") == "anthropic"
            and "base_url" not in data
        ):
            return {**data, "base_url": "https://api.anthropic.com"}
        return data

    @model_validator(mode="after")
    def _check_provider_keys(self) -> ModelSettings:
        if self.provider == "anthropic" and self.base_url.endswith("/v1"):
            # The SDK adds /v1/messages itself: the shipped config's Ollama address with only
            # the provider switched would post to .../v1/v1/messages.
            raise ValueError(
                'base_url: with provider = "anthropic" it is the API root, without /v1 '
                "(leave base_url out for https://api.anthropic.com)"
            )
        if self.provider == "anthropic":
            for key in ("presence_penalty", "frequency_penalty", "seed"):
                if getattr(self, key) is not None:
                    raise ValueError(f'{key}: not supported with provider = "anthropic"')
        taken = sorted(set(self.extra_body) & _BODY_KEYS_OF_THE_BOT)
        if taken:
            raise ValueError(f"extra_body: {taken[0]!r} is set by the bot, not here")
        return self

    @field_validator("system_prompt")
    @classmethod
    def _known_placeholders(cls, value: str) -> str:
        # A misspelt {chanel} would reach the model as is; other braces (JSON, code) are text.
        unknown = [name for name in PLACEHOLDER.findall(value) if name not in PERSONA_PLACEHOLDERS]
        if unknown:
            allowed = ", ".join(f"{{{name}}}" for name in PERSONA_PLACEHOLDERS)
            raise ValueError(
                f"unknown placeholder {{{unknown[0]}}}; the allowed ones are {allowed}"
            )
        return value


_BODY_KEYS_OF_THE_BOT = frozenset({"model", "messages", "system", "stream", "stream_options"})
