"""Field checks shared by the config sections of ``bot/`` (URLs, secrets)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, SecretStr


def _http_url(value: str) -> str:
    value = value.strip().rstrip("/")
    if not value.startswith(("http://", "https://")):
        raise ValueError(f"must start with http:// or https://, got {value!r}")
    return value


def _blank_is_none(value: SecretStr | None) -> SecretStr | None:
    # An empty TOKEN= line in an env file means "no secret", not an empty bearer token.
    if value is not None and not value.get_secret_value().strip():
        return None
    return value


HttpUrl = Annotated[str, AfterValidator(_http_url)]
OptionalSecret = Annotated[SecretStr | None, AfterValidator(_blank_is_none)]
