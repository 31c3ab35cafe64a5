"""The invite URL asks for what the settings need: threads where conversations move, reactions
for the status, files for the tools' images; check-config says so in words."""

from __future__ import annotations

from bot.config.report import permission_facts
from bot.config.schema import Config
from bot.serve.startup import invite_permissions, invite_url


def test_the_settings_add_what_they_need() -> None:
    plain = invite_permissions(Config())
    assert not plain.create_public_threads and not plain.add_reactions
    assert permission_facts(Config()) == []
    channel = {"match": {"channel_ids": [1]}, "threads": {"enabled": True}}
    config = Config.model_validate({"channels": [channel], "status": {"reactions": True}})
    needed = invite_permissions(config)
    assert needed.create_public_threads and needed.send_messages_in_threads
    assert needed.add_reactions and needed.read_message_history
    assert f"permissions={needed.value}" in invite_url(1234, config)
    [threads, reactions] = permission_facts(config)
    assert "Create Public Threads" in threads and "Add Reactions" in reactions
