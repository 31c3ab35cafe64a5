"""The Read Message History restriction inside the builder, on a replayed log: whatever the
mode (learned score or participation rules), every message of a restricted context is one the
asker may read, and nothing is fetched for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from conversation.common.settings import ContextSettings
from conversation.replay.log_source import LogSource
from conversation.selection.builder import ContextBuilder
from conversation.sources.cache import ChannelCache
from conversation.sources.read_access import RESTRICTED_NOTE, HistoryRestriction, RestrictedReader
from conversation.sources.reader import ChannelReader
from conversation.sources.source import reference_id

LOGS = Path(__file__).resolve().parents[2] / "logs"


@pytest.mark.parametrize("learned", [True, False])
@pytest.mark.parametrize("log", ["interleaved.json", "fake_guild_general.json"])
async def test_a_restricted_context_holds_only_what_the_asker_may_read(log: str, learned: bool):
    source = LogSource.from_file(LOGS / log)
    settings = ContextSettings(learned_relevance=learned, min_linear=4, max_total=30)
    builder = ContextBuilder(settings)
    cache = ChannelCache(source.channel_id)
    for trigger in source.messages[-5:]:
        # Read unrestricted first, so the cache holds everyone's messages (as in a live channel).
        full = await builder.build(trigger, ChannelReader(source, cache))
        bot_id = next((m.author.id for m in source.messages if m.author.bot), 0)
        rule = HistoryRestriction.for_trigger(trigger, bot_id)
        reader = RestrictedReader(source, cache, rule)
        selection = await builder.build(trigger, reader)
        assert reader.rest_calls == 0 or reference_id(trigger) is not None
        assert selection.problems[0] == RESTRICTED_NOTE
        assert selection.work_log[0].action == "history_restricted"
        for message in selection.messages:
            assert rule.allows(message, lambda i: cache.get(i) or None), message.id
        others = [m for m in full.messages if m.author.id != trigger.author.id]
        assert len(selection.messages) <= len(full.messages) or not others
