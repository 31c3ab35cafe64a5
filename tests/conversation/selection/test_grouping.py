"""Grouping a stretch of channel into conversations, as ``/catchup`` reads it."""

from __future__ import annotations

from conversation.common import ContextSettings
from conversation.replay import LogSource, parse_export
from conversation.selection import ContextBuilder, group_conversations, worth_summarising
from tests.fakes.synthetic import busy_channel


def messages_of(**kwargs):
    """A synthetic channel where everyone replies within their conversation and writes no
    name: only the replies say which conversation a message is in."""
    export = busy_channel(reply_rate=1.0, old_reply_rate=0.0, **kwargs)
    gold = {}
    for message in export["messages"]:
        gold[int(message["id"])] = message.pop("_gold")
        message["mentions"] = []
    return LogSource(parse_export(export)).messages, gold


def test_replies_group_each_message_with_its_conversation():
    messages, gold = messages_of(seed=4, messages=120, silence_rate=0.0)
    rules = ContextBuilder(ContextSettings(learned_relevance=False))
    found = group_conversations(messages, rules)
    for conversation in found:
        assert len({gold[i] for i in conversation.message_ids}) == 1
    assert sum(len(c.joins) for c in found) == len(messages)
    assert all(j.reason == "replies to it" for c in found for j in c.joins[1:])
    assert len(found) == len(set(gold.values()))


def test_nothing_joins_across_a_silence():
    messages, _ = messages_of(seed=4, messages=200, silence_rate=0.05)
    stretch, stretches = 0, {}
    for before, message in zip([None, *messages], messages, strict=False):
        if before is not None and (message.created_at - before.created_at).seconds > 1800:
            stretch += 1
        stretches[message.id] = stretch
    assert stretch >= 3  # the scene has silences
    for conversation in group_conversations(messages, ContextBuilder(ContextSettings())):
        assert len({stretches[i] for i in conversation.message_ids}) == 1


def test_the_largest_are_summarised_in_the_order_they_started():
    messages, _ = messages_of(seed=4, messages=80, silence_rate=0.0)
    found = group_conversations(messages, ContextBuilder(ContextSettings()))
    chosen = worth_summarising(found, 2)
    sizes = sorted((len(c.joins) for c in found), reverse=True)
    assert sorted(len(c.joins) for c in chosen) == sorted(sizes[:2])
    assert [found.index(c) for c in chosen] == sorted(found.index(c) for c in chosen)
    assert worth_summarising(found, 5, least_messages=1000) == []
