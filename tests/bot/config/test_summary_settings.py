"""``[context]`` summary settings: a ``summary_model`` must name a ``[models.NAME]`` table, at
the top level and in a channel's table alike."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.config.report import privacy_facts
from bot.config.schema import Config

SMALL = {"small": {"base_url": "http://127.0.0.1:8081/v1", "name": "qwen2.5-3b-instruct"}}


def test_a_summary_model_names_a_models_table():
    config = Config.model_validate({"context": {"summary_model": "small"}, "models": SMALL})
    assert config.context.summary_model == "small" and config.context.summarize
    with pytest.raises(ValidationError, match=r"\[context\] summary_model: 'big' is no"):
        Config.model_validate({"context": {"summary_model": "big"}, "models": SMALL})


def test_a_channel_table_is_checked_too():
    channel = {"match": {"channel_ids": [1]}, "context": {"summary_model": "tiny"}}
    with pytest.raises(ValidationError, match=r"\[\[channels\]\] 1 \[context\] summary_model"):
        Config.model_validate({"models": SMALL, "channels": [channel]})


def test_check_config_says_where_the_older_messages_go_to_be_summarized():
    config = Config.model_validate({"context": {"summary_model": "small"}, "models": SMALL})
    (fact,) = [f for f in privacy_facts(config) if f.startswith("summarizes: ")]
    assert "sent to [models.small] once more" in fact
    plain = Config.model_validate({"context": {"summarize": False}})
    assert not [f for f in privacy_facts(plain) if f.startswith("summarizes: ")]


def test_a_summary_model_the_channel_model_settings_cannot_be_sent_to_is_refused():
    claude = {"claude": {"provider": "anthropic", "name": "claude-haiku"}}
    with pytest.raises(ValidationError, match=r"summary_model: 'claude' cannot write with"):
        Config.model_validate(
            {"model": {"seed": 7}, "context": {"summary_model": "claude"}, "models": claude}
        )


def test_the_privacy_facts_say_how_far_the_cap_may_grow():
    (default,) = [f for f in privacy_facts(Config()) if f.startswith("reads: ")]
    assert "up to 50 earlier messages of the channel (120 in a channel whose" in default
    small = Config.model_validate({"context": {"max_total": 12}})
    (kept,) = [f for f in privacy_facts(small) if f.startswith("reads: ")]
    assert "up to 12 earlier messages of the channel, always" in kept
