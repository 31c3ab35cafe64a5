"""Checks of operator input shared across ``bot/``: config URLs and secrets, Discord ids."""

from __future__ import annotations

import argparse
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, SecretStr


def _http_url(value: str) -> str:
    value = value.strip().rstrip("/")
    credentials = "@" in urlsplit(value).netloc
    if not value.startswith(("http://", "https://")):
        shown = "" if credentials else f", got {value!r}"  # never a password
        raise ValueError(f"must start with http:// or https://{shown}")
    if credentials:
        # The HTTP client logs every request's url, and errors quote it.
        raise ValueError(
            "holds a user:password, which would be logged with every request; send them as a "
            'header instead (extra_headers = { Authorization = "Basic ..." }, or api_key)'
        )
    return value


def _blank_is_none(value: SecretStr | None) -> SecretStr | None:
    # An empty TOKEN= line in an env file means "no secret", not an empty bearer token.
    if value is not None and not value.get_secret_value().strip():
        return None
    return value


def _postgres_url(value: SecretStr | None) -> SecretStr | None:
    # A URL may carry a password: the message names what is wrong, never the value.
    value = _blank_is_none(value)
    if value is not None and not value.get_secret_value().startswith(
        ("postgresql://", "postgres://")
    ):
        raise ValueError("must start with postgresql:// (e.g. postgresql://user:pw@host/db)")
    return value


HttpUrl = Annotated[str, AfterValidator(_http_url)]
PostgresUrl = Annotated[SecretStr | None, AfterValidator(_postgres_url)]
OptionalSecret = Annotated[SecretStr | None, AfterValidator(_blank_is_none)]


MAX_SNOWFLAKE_DIGITS = len(str(2**63 - 1))


def snowflake(text: str) -> int:
    """A Discord id typed by a person: digits only, and below 2**63 (SQLite and Discord).

    Raises ``argparse.ArgumentTypeError`` so that argparse shows its message as is.
    """
    value = text.strip()
    # The length is checked before int(): Python refuses to convert more than 4300 digits
    # (ValueError), and anything past 19 digits is no id anyway.
    if not (value.isascii() and value.isdigit()) or len(value) > MAX_SNOWFLAKE_DIGITS:
        raise argparse.ArgumentTypeError(f"not a Discord id: {_shown(text)}")
    if not 0 < int(value) < 2**63:
        raise argparse.ArgumentTypeError(f"not a Discord id: {_shown(text)}")
    return int(value)


def _shown(text: str) -> str:
    """The input as quoted in the error, cut so that a pasted novel stays one line."""
    return repr(text) if len(text) <= 40 else repr(text[:40]) + f"... ({len(text)} characters)"
