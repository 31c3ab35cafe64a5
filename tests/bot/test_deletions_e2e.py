"""What is deleted is gone: a follow-up never sends again a deleted message, a deleted answer of
the bot's, or an edited message without saying so, however it remembers the request before
(in this process, or read back from the store after a restart). Real nextcord client, fake
Discord, fake OpenAI server, a real SQLite store."""

from __future__ import annotations

import asyncio
import json
import re

from bot.demo.openai_server import Answer, RecordedRequest
from bot.storage import Store
from bot.storage.models import REMOVED
from tests.bot.test_append_only_e2e import bot_runs
from tests.bot.test_summary_e2e import is_summary_request, long_conversation
from tests.fakes.harness import BOT_ID, CHANNEL, CHLOE, ELI, Harness, running_bot, settled

PASSWORD = "hunter2-rosebud"


async def deleted(bot: Harness, message_id: int) -> None:
    """A moderator deletes the message; back once the bot's cache knows."""
    await bot.discord.delete_message(CHANNEL, message_id)
    cache = bot.client.caches.get(CHANNEL)
    for _ in range(200):
        if cache is not None and cache.is_deleted(message_id):
            break
        await asyncio.sleep(0.02)
    await settled(bot)


def sent(bot: Harness) -> str:
    """Everything the model was sent by the latest answer."""
    return json.dumps(bot.model.chat_requests[-1].messages, ensure_ascii=False)


async def test_a_deleted_answer_of_the_bot_is_not_sent_again():
    async with running_bot() as bot:
        bot.model.queue(Answer(text="The vault code is 7741, keep it to yourself."))
        question = await bot.discord.user_says(
            CHANNEL, CHLOE, f"<@{BOT_ID}> what is the vault code?"
        )
        answer = await bot.discord.wait_for_bot_message(
            CHANNEL, after=int(question["id"]), timeout=10
        )
        await settled(bot)
        await deleted(bot, int(answer["id"]))  # a moderator takes it down
        await bot.answer_to(
            CHANNEL, CHLOE, f"<@{BOT_ID}> and the alarm?", reply_to=int(question["id"])
        )
        await settled(bot)
        first, second = bot.model.chat_requests
        later = sent(bot)
    assert "the alarm" in second.messages[-1]["content"]
    assert "7741" not in later
    # The request before is still continued, without the answer.
    assert [m["content"] for m in second.messages[: len(first.messages) - 1]] == [
        m["content"] for m in first.messages[:-1]
    ]


async def test_an_answer_in_several_messages_goes_when_one_part_is_deleted():
    """A long answer is posted as several Discord messages, and the conversation goes on; then a
    moderator takes down its last part (where the model, say, repeated something it should not
    have): the answer is not sent again as the bot's turn, though the request that holds it is
    two answers back."""
    said = "The plan, step by step. " + "Then check the replica and the backup. " * 70
    async with running_bot() as bot:
        bot.model.queue(Answer(text=said + "The root token is 5521."))
        question = await bot.discord.user_says(CHANNEL, CHLOE, f"<@{BOT_ID}> what is the plan?")
        await bot.discord.wait_for_bot_message(CHANNEL, after=int(question["id"]), timeout=10)
        await settled(bot)
        parts = [m for m in bot.discord.bot_messages(CHANNEL) if int(m["id"]) > int(question["id"])]
        assert len(parts) >= 2 and "5521" in parts[-1]["content"]
        reply = {"mention_author": False}
        second = await bot.answer_to(
            CHANNEL, CHLOE, "and the order?", reply_to=int(parts[0]["id"]), **reply
        )
        await settled(bot)
        await deleted(bot, int(parts[-1]["id"]))
        await bot.answer_to(CHANNEL, CHLOE, "and after?", reply_to=int(second["id"]), **reply)
        await settled(bot)
        later = sent(bot)
    assert "and after?" in bot.model.chat_requests[-1].messages[-1]["content"]
    assert "5521" not in later  # the parts not deleted are still messages of the channel


async def _password_then_question(bot: Harness) -> tuple[int, dict]:
    """Eli posts a password by mistake, nobody replies to it, Chloé asks the bot about the
    upgrade: (its id, the answer)."""
    slip = await bot.discord.user_says(CHANNEL, ELI, f"the admin password is {PASSWORD}")
    answer = await bot.answer_to(
        CHANNEL, CHLOE, f"<@{BOT_ID}> can I use the hard-link mode for 800 GB?"
    )
    await settled(bot)
    assert PASSWORD in sent(bot)  # it was read then
    return int(slip["id"]), answer


async def _follow_up_after_a_restart(tmp_path, *, live: bool) -> tuple[str, Store]:
    """The password deleted (``live``: while the bot runs, else while it is down), then a
    follow-up after a restart: what the model was sent, and the store."""
    store = Store.open(tmp_path / "store.sqlite3")
    async with bot_runs(store) as run:
        async with run() as bot:
            slip, answer = await _password_then_question(bot)
            if live:
                await deleted(bot, slip)
                for _ in range(200):  # the store records the deletion on its writer thread
                    if [v for v in store.message_versions(slip) if v.state == "invalidated"]:
                        break
                    await asyncio.sleep(0.02)
        if not live:
            await bot.discord.delete_message(CHANNEL, slip)
        async with run() as again:  # restarted: nothing in memory, the store remembers
            follow_up = "and if the upgrade fails halfway, what then?"
            reply = {"reply_to": int(answer["id"]), "mention_author": False}
            await again.answer_to(CHANNEL, CHLOE, follow_up, **reply)
            await settled(again)
            assert "fails halfway" in again.model.chat_requests[-1].messages[-1]["content"]
            return sent(again), store


async def test_a_password_deleted_live_is_not_sent_again_after_a_restart(tmp_path):
    later, store = await _follow_up_after_a_restart(tmp_path, live=True)
    with store:
        latest = store.recent_interactions()[0]
        record = store.explain(latest.trigger_message_id)
        exported = list(store.export())
    assert PASSWORD not in later
    assert PASSWORD not in json.dumps([m.excerpt for m in record.context])
    assert PASSWORD not in json.dumps(exported[-1])  # the follow-up's line of the export


async def test_a_password_deleted_while_the_bot_was_down_is_not_sent_again(tmp_path):
    later, store = await _follow_up_after_a_restart(tmp_path, live=False)
    with store:
        exported = list(store.export())
    assert PASSWORD not in later
    assert PASSWORD not in json.dumps(exported[-1])


async def test_an_edited_message_says_so_in_the_prompt():
    async with running_bot() as bot:
        note = await bot.discord.user_says(CHANNEL, ELI, "run the tests against staging")
        answer = await bot.answer_to(
            CHANNEL, CHLOE, f"<@{BOT_ID}> is that safe?", reply_to=int(note["id"])
        )
        await settled(bot)
        await bot.discord.edit_message(CHANNEL, int(note["id"]), "run the tests against prod")
        await settled(bot)
        await bot.answer_to(
            CHANNEL, CHLOE, "and now?", reply_to=int(answer["id"]), mention_author=False
        )
        await settled(bot)
        first, second = bot.model.chat_requests
    (edited,) = [m["content"] for m in second.messages if "against prod" in m["content"]]
    header = edited.partition(": run the tests")[0]
    assert header.endswith(" (edited)"), edited
    assert not any("(edited)" in str(m["content"]) for m in first.messages)
    assert sum("(edited)" in str(m["content"]) for m in second.messages) == 1


def summaries_retelling_notes(request: RecordedRequest) -> Answer | None:
    """The fake model's summaries retell every note they are given (a secret in one too)."""
    if not is_summary_request(request):
        return None
    notes = re.findall(r"note \d+ on the \w+", request.body["messages"][1]["content"])
    return Answer(text="Summary: " + "; ".join(notes) + ".")


async def test_a_deleted_message_a_summary_stands_for_takes_the_summary_with_it(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store, context={"max_total": 20}) as bot:
            bot.model.script(summaries_retelling_notes)
            talk = await long_conversation(bot, messages=20)
            before = talk.answers[-1].body["messages"]
            assert before[1]["content"].startswith("(Summary of ")  # the last answer cut
            assert "note 1 on " in before[1]["content"]  # and summarized note 1
            (note,) = [
                m for m in bot.discord.messages(CHANNEL) if m["content"].startswith("note 1 on ")
            ]
            await deleted(bot, int(note["id"]))
            for _ in range(200):  # the store replaces the summary on its writer thread
                if "note 1 on " not in json.dumps(list(store.export())):
                    break
                await asyncio.sleep(0.02)
            reply = {"reply_to": int(talk.replies[-1]["id"]), "mention_author": False}
            await bot.answer_to(CHANNEL, CHLOE, "and after that?", **reply)
            await settled(bot)
            later = bot.model.chat_requests[-1].body["messages"]
        exported = list(store.export())
        explained = store.explain(int(talk.replies[-1]["id"]))
    # A plain cut: no summary, nothing of the note; the rest of the request is continued.
    assert not any(m["content"].startswith("(Summary of ") for m in later)
    assert "note 1 on " not in json.dumps(later)
    assert json.dumps(later[1 : len(before) - 1]) == json.dumps(before[2:])
    # In the store, every summary that stood for it is replaced, as forget-user does.
    summaries = [
        m["content"] for line in exported for m in line["messages"] if "Summary:" in m["content"]
    ]
    assert not [s for s in summaries if "note 1 on " in s]
    assert [m.excerpt for m in explained.context if m.reasons == ["summary"]] == [REMOVED]


def clue_ids(bot: Harness) -> set[int]:
    """The messages the running bot keeps derived words of: every builder's, the Follower's."""
    runtimes = bot.client.answerer.channels._built.values()
    kept = {clue.id for runtime in runtimes for clue in runtime.builder.clues._clues.values()}
    return kept | {clue.id for clue in bot.client.admission.follower._clues._clues.values()}


async def test_a_deleted_message_leaves_the_scores_clues_at_once():
    """The score's words of a message are not sent, but they are the member's words: a
    deletion takes them from every builder and the Follower, before any new answer."""
    async with running_bot() as bot:
        secret = await bot.discord.user_says(CHANNEL, ELI, f"the wifi password is {PASSWORD}")
        await bot.answer_to(CHANNEL, CHLOE, f"<@{BOT_ID}> what did Eli just say?")
        await settled(bot)
        assert int(secret["id"]) in clue_ids(bot)  # read by the build
        await deleted(bot, int(secret["id"]))
        assert int(secret["id"]) not in clue_ids(bot)


async def test_a_bulk_deletion_the_store_refuses_still_leaves_every_message(tmp_path):
    """A moderator's bulk deletion while the store fails each write: every message leaves the
    cache (the first refusal does not end the handler), and the next answer sends none."""
    store = Store.open(tmp_path / "store.sqlite3")
    async with running_bot(store=store) as bot:
        said = [
            await bot.discord.user_says(CHANNEL, ELI, f"the {which} password is {PASSWORD}")
            for which in ("wifi", "vpn")
        ]
        await bot.answer_to(CHANNEL, CHLOE, f"<@{BOT_ID}> what did Eli just say?")
        await settled(bot)
        store.close()  # every write now fails at once
        ids = [int(message["id"]) for message in said]
        await bot.discord.delete_messages(CHANNEL, ids)
        cache = bot.client.caches.get(CHANNEL)
        for _ in range(100):
            if cache is not None and cache.is_deleted(ids[0]):
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)  # the handler's store writes fail in turn
        assert cache is not None and all(cache.is_deleted(i) for i in ids)
        await bot.answer_to(CHANNEL, CHLOE, f"<@{BOT_ID}> and now?")
        assert PASSWORD not in sent(bot)
