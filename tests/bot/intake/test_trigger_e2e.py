"""A trigger travels as one value, its kind and follow line with it, from the gateway through
the burst window and the line to its answer: the real nextcord client against the stand-in
Discord and model, the kind read from the answers' metrics, the follow line from the store."""

from __future__ import annotations

import asyncio
import logging

from bot.demo.openai_server import Answer
from bot.intake import admission
from bot.storage import Store, render_text
from tests.bot.test_follow_e2e import answered, follow_up, talk_to_bot
from tests.fakes.harness import BEN, BOT_ID, CHANNEL, CHLOE, Harness, running_bot, settled

BOTS_ANSWER = 1350094616002560000  # the bot's answer in the example log
KINDS = ("mention", "reply", "dm", "always_on", "follow")


def answers_by_kind(bot: Harness) -> dict[str, int]:
    """The answers counted so far, by their trigger's kind (the kinds never counted left out)."""
    assert bot.client.metrics is not None
    registry = bot.client.metrics.registry
    counted = {
        kind: registry.get_sample_value(
            "threadwise_answers_total", {"outcome": "success", "trigger": kind}
        )
        for kind in KINDS
    }
    return {kind: int(count) for kind, count in counted.items() if count}


async def test_a_burst_is_answered_as_its_latest_message_with_its_follow_line(tmp_path):
    """A reply to the bot, then at once a follow-up calling no one: one answer, to the
    follow-up, counted and recorded as followed (the line is the follow-up's own). The follow
    threshold is low: the reply just before it makes the fitted score less sure."""
    with Store.open(tmp_path / "store.sqlite3") as store:
        triggers = {"burst_window_seconds": 0.5, "follow_threshold": 0.05}
        async with running_bot(store=store, metrics={"port": 0}, triggers=triggers) as bot:
            answer = await talk_to_bot(bot)
            bot.model.queue(Answer(text="It does not."), Answer(text="A second answer."))
            requests = len(bot.model.chat_requests)
            reply = await bot.discord.user_says(
                CHANNEL, CHLOE, "thanks!", reply_to=answer["id"], mention_author=False
            )
            said = await follow_up(bot)
            assert await answered(bot, said, wait=1.0)
            assert not await answered(bot, reply, wait=0)
            assert len(bot.model.chat_requests) == requests + 1
            assert answers_by_kind(bot) == {"mention": 1, "follow": 1}
        text = render_text(await store.explain_async(int(said["id"])))
    assert "followed: no mention, continues the conversation with Chloé" in text


async def test_a_burst_is_answered_as_its_latest_message_without_an_earlier_follow_line(
    tmp_path, caplog
):
    """A follow-up (taken as one), then at once a mention: the mention is answered as a
    mention, and its record says nothing of following."""
    caplog.set_level(logging.INFO, logger=admission.log.name)
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(
            store=store, metrics={"port": 0}, triggers={"burst_window_seconds": 0.5}
        ) as bot:
            await talk_to_bot(bot)
            bot.model.queue(Answer(text="It does not."), Answer(text="A second answer."))
            said = await follow_up(bot)
            mention = await bot.discord.user_says(CHANNEL, CHLOE, f"<@{BOT_ID}> one more thing")
            assert await answered(bot, mention, wait=1.0)
            assert f"following message {said['id']}: " in caplog.text
            assert not await answered(bot, said, wait=0)
            assert answers_by_kind(bot) == {"mention": 2}
        text = render_text(await store.explain_async(int(mention["id"])))
    assert "followed" not in text


async def test_a_trigger_that_replaces_one_in_line_is_answered_as_its_own_kind():
    """Chloé's mention waits in line behind Ben's answer; her reply to the bot then takes its
    place: it is answered, as a reply, and her mention is not."""
    async with running_bot(
        fake_model={"default": Answer(text="ok", first_byte_delay=1.0)}, metrics={"port": 0}
    ) as bot:
        await bot.discord.user_says(CHANNEL, BEN, f"<@{BOT_ID}> is the deploy done?")
        await bot.model.wait_for_chat_requests(1)  # Ben's answer is being written
        mention = await bot.discord.user_says(CHANNEL, CHLOE, f"<@{BOT_ID}> how long then?")
        await waiting_in_line(bot, int(mention["id"]), "mention")
        reply = await bot.discord.user_says(
            CHANNEL, CHLOE, "and with --link?", reply_to=BOTS_ANSWER, mention_author=False
        )
        await waiting_in_line(bot, int(reply["id"]), "reply")
        await bot.model.wait_for_chat_requests(2)
        await settled(bot)
        assert answers_by_kind(bot) == {"mention": 1, "reply": 1}
        assert await answered(bot, reply, wait=0)
        assert not await answered(bot, mention, wait=0)


async def waiting_in_line(bot: Harness, message_id: int, kind: str) -> None:
    """Wait until the channel's line holds exactly the trigger of ``message_id``, of ``kind``."""
    async with asyncio.timeout(5):
        while [(t.message.id, t.kind) for t in bot.client.queue.waiting(CHANNEL)] != [
            (message_id, kind)
        ]:
            await asyncio.sleep(0.02)
