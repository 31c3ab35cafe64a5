"""What the bot's messages may ping (nextcord's real AllowedMentions, no mocks)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.discord.mentions import (
    ZERO_WIDTH_SPACE,
    MentionSettings,
    allowed_mentions,
    defuse_mass_mentions,
    make_safe,
)


def test_default_pings_nobody() -> None:
    payload = allowed_mentions(MentionSettings()).to_dict()
    assert payload["parse"] == []
    assert payload.get("replied_user", False) is False  # Discord's default when absent: false
    assert "users" not in payload and "roles" not in payload


def test_user_mentions_and_reply_ping_when_allowed() -> None:
    payload = allowed_mentions(
        MentionSettings(allow_user_mentions=True, mention_replied_user=True)
    ).to_dict()
    assert payload["parse"] == ["users"]
    assert payload["replied_user"] is True


def test_everyone_and_roles_only_when_explicitly_configured() -> None:
    payload = allowed_mentions(
        MentionSettings(allow_everyone=True, allow_role_mentions=True)
    ).to_dict()
    assert sorted(payload["parse"]) == ["everyone", "roles"]


def test_settings_reject_unknown_keys() -> None:
    with pytest.raises(ValidationError):
        MentionSettings(allow_users=True)  # a typo must not silently keep the default


def test_defuse_mass_mentions() -> None:
    text = "Hey @everyone and @here, also @Everyone, email a@herethere.org, @someone."
    defused = defuse_mass_mentions(text)
    assert "@everyone" not in defused and "@here" not in defused.lower()
    assert f"@{ZERO_WIDTH_SPACE}everyone" in defused
    assert f"@{ZERO_WIDTH_SPACE}Everyone" in defused
    assert "@someone" in defused
    assert defused.replace(ZERO_WIDTH_SPACE, "") == text  # nothing else changes
    assert defuse_mass_mentions(defused) == defused  # idempotent


def test_make_safe_follows_the_setting() -> None:
    text = "@everyone look"
    assert make_safe(text, MentionSettings()) != text
    assert make_safe(text, MentionSettings(allow_everyone=True)) == text
