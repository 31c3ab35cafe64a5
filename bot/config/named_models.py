"""``[models.NAME]`` tables: several model endpoints, each chosen by name.

A support channel may want a large hosted model and an off-topic channel a small local one; each
endpoint is declared once under a name and chosen with ``[model] use = "NAME"``, a channel's
``model = "NAME"`` (``[[channels]]``) or ``/model``. A named model carries only what tells one
endpoint from another (its connection, the model's name, its window); the persona, sampling,
timeouts and retries stay those of ``[model]`` and the channel.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from bot.config.model_settings import ModelSettings
from bot.config.validators import HttpUrl, OptionalSecret
from conversation.common import StrictSection

MODEL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
"""A named model's name: a TOML bare key, short enough for a Discord choice."""
MAX_NAMED_MODELS = 24  # with "default", the 25 choices one Discord command option can offer
ENV_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class NamedModel(StrictSection):
    """One ``[models.NAME]`` table."""

    provider: Literal["openai", "anthropic"] = Field(
        "openai", description="Which API the endpoint speaks."
    )
    base_url: HttpUrl | None = Field(
        None,
        description="The endpoint (as [model] base_url); unset: Anthropic's own address with "
        'provider = "anthropic", else [model] base_url.',
    )
    api_key_env: str | None = Field(
        None,
        pattern=ENV_VARIABLE.pattern,
        description="Environment variable holding this endpoint's API key.",
    )
    api_key: OptionalSecret = Field(
        None, description="The key itself (api_key_env's variable wins); best left out of files."
    )
    name: str = Field(..., min_length=1, max_length=200, description="Model name sent.")
    context_tokens: int | None = Field(
        None,
        ge=256,
        le=10_000_000,
        description="The model's context window in tokens; unset: [model] context_tokens.",
    )

    def connection(self) -> dict[str, Any]:
        """The ``[model]`` keys this table sets, as the file would write them."""
        values: dict[str, Any] = {"provider": self.provider, "name": self.name}
        if self.base_url is not None:
            values["base_url"] = self.base_url
        if self.context_tokens is not None:
            values["context_tokens"] = self.context_tokens
        return values


def model_with(
    base: ModelSettings,
    changes: Mapping[str, Any],
    named: NamedModel | None = None,
) -> ModelSettings:
    """``base`` with ``changes`` (keys of ``[model]``, as TOML gives them) and, first, a named
    model's connection, validated as one ``[model]`` table would be (strictly, cross-key checks
    included). Raises pydantic's ``ValidationError``.

    Secrets never pass through the JSON: they are not keys a channel may set, so the validated
    copy takes them back from ``base`` (or the named model) afterwards.
    """
    written = base.model_dump(mode="json", exclude_unset=True, exclude=SECRET_MODEL_KEYS)
    if named is not None:
        # Another endpoint: nothing of [model]'s own connection carries over.
        for key in ("provider", "base_url"):
            written.pop(key, None)
        written |= named.connection()
    written |= dict(changes)
    checked = ModelSettings.model_validate_json(json.dumps(written), strict=True)
    # [model]'s key and headers are for [model]'s endpoint: never sent to another one.
    secrets: dict[str, Any] = (
        {"api_key": base.api_key, "extra_headers": base.extra_headers}
        if named is None
        else {"api_key": named.api_key, "extra_headers": {}}
    )
    values = {key: getattr(checked, key) for key in written} | secrets
    if "base_url" not in written:  # left to the provider's own default
        values["base_url"] = checked.base_url
    return base.model_copy(update=values)


SECRET_MODEL_KEYS = {"api_key", "extra_headers"}


def keys_from_env(data: dict[str, Any], env: Mapping[str, str]) -> list[str]:
    """Put each ``[models.NAME] api_key_env`` variable's value in the raw config ``data`` as
    that table's ``api_key`` (the variable wins, as ``MODEL_API_KEY`` does for ``[model]``).
    Returns a problem line for each variable named but not set: a typo there would otherwise
    send no key and fail only at the first answer."""
    problems = []
    models = data.get("models")
    for name, table in models.items() if isinstance(models, dict) else ():
        variable = table.get("api_key_env") if isinstance(table, dict) else None
        if not isinstance(variable, str) or not ENV_VARIABLE.fullmatch(variable):
            continue  # validation names what is wrong with it
        if env.get(variable):
            table["api_key"] = env[variable]
        elif not table.get("api_key"):
            problems.append(
                f"[models.{name}] api_key_env: the environment variable {variable} is not set"
            )
    return problems
