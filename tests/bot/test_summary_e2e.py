"""A long conversation keeps its beginning: at each cut the model summarizes what falls out, and
the summary is sent right after the system prompt, unchanged until the next cut (real nextcord
client, fake Discord, fake OpenAI server, a real SQLite store)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from bot.demo.openai_server import Answer, Fail, FakeOpenAI, RecordedRequest
from bot.storage import Store
from bot.storage.models import REMOVED
from conversation.common.settings import ContextSettings
from tests.bot.test_append_only_e2e import bot_runs
from tests.fakes.harness import BOT_ID, CHANNEL, CHLOE, DEV, ELI, Harness, running_bot, settled

SUMMARY_PROMPT = ContextSettings().summary_prompt
TOPICS = ["the upgrade", "the replica", "the backup", "the disk", "the index", "the vacuum"]


def is_summary_request(request: RecordedRequest) -> bool:
    messages = request.body.get("messages") or [{}]
    return messages[0].get("content") == SUMMARY_PROMPT


def summaries_written(request: RecordedRequest) -> Answer | None:
    """The fake model's summaries: short, numbered by the call."""
    if is_summary_request(request):
        return Answer(text=f"Summary {request.body['messages'][1]['content'].count(chr(10))}.")
    return None


def summaries_failing(request: RecordedRequest) -> Fail | None:
    return Fail(status=500) if is_summary_request(request) else None


@dataclass
class Talk:
    answers: list[RecordedRequest]  # the answers' requests, in order
    summaries: list[RecordedRequest]
    replies: list[dict]  # the bot's answers as posted (whole)


async def long_conversation(bot: Harness, messages: int = 150, every: int = 5) -> Talk:
    """Three people talk about one migration, each message replying to the one before; every
    ``every``-th message, Chloé asks the bot (the first time by a mention, then by replying to
    its latest answer)."""
    people = [ELI, DEV]
    replies: list[dict] = []
    latest: int | None = None
    for number in range(1, messages + 1):
        topic = TOPICS[number % len(TOPICS)]
        if number % every:
            said = await bot.discord.user_says(
                CHANNEL, people[number % 2], f"note {number} on {topic}, for Chloé",
                reply_to=latest, mention_author=False,
            )  # fmt: skip
            latest = int(said["id"])
            continue
        if not replies:
            said = await bot.discord.user_says(
                CHANNEL, CHLOE, f"<@{BOT_ID}> question {number}: what about {topic}?"
            )
        else:
            said = await bot.discord.user_says(
                CHANNEL, CHLOE, f"question {number}: and {topic}?",
                reply_to=int(replies[-1]["id"]), mention_author=False,
            )  # fmt: skip
        reply = await bot.discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=10)
        await settled(bot)
        replies.append(bot.discord.message(CHANNEL, int(reply["id"])))
        latest = int(said["id"])  # the others reply to her question, not to the bot
    requests = bot.model.chat_requests
    return Talk(
        answers=[r for r in requests if not is_summary_request(r)],
        summaries=[r for r in requests if is_summary_request(r)],
        replies=replies,
    )


def work_logs(store: Store, replies: list[dict]) -> list[list]:
    """Each answer's work log, in order."""
    found = []
    for reply in replies:
        found.append(store.explain(int(reply["id"])).work_log)
    return found


def cut(log: list) -> bool:
    return any(e.action == "budget_cut" and "conversation cut" in e.detail for e in log)


async def test_a_long_conversation_makes_one_summary_call_per_cut_and_keeps_its_prefix(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store, context={"max_total": 20}) as bot:
            bot.model.script(summaries_written)
            talk = await long_conversation(bot)
        logs = work_logs(store, talk.replies)
        exported = list(store.export())
        explained = store.explain(int(talk.replies[-1]["id"]))
    assert len(talk.answers) == len(talk.replies) == 30
    cuts = [i for i, log in enumerate(logs) if cut(log)]
    assert len(cuts) >= 3
    # Rarely: the messages a cut summarized are not selected back in (the room a cut leaves,
    # half of max_total, holds the next answer's six messages).
    assert not [i for i in cuts if i + 1 in cuts]
    # One summary call per cut, and no other extra call.
    assert len(talk.summaries) == len(cuts)
    assert [i for i, log in enumerate(logs) if any(e.action == "summary" for e in log)] == cuts
    summary = None
    for index, (request, log) in enumerate(zip(talk.answers, logs, strict=True)):
        sent = request.body["messages"]
        if index in cuts:  # the summary right after the system prompt, the latest one
            assert sent[1]["content"].startswith("(Summary of ")
            summary = sent[1]
            assert [e.status for e in log if e.action == "summary"] == ["success"]
            continue
        if index == 0:
            continue
        # Between cuts: the request before, byte for byte, then its answer; the same summary.
        before = talk.answers[index - 1].body["messages"]
        assert json.dumps(sent[: len(before)]) == json.dumps(before), index
        assert sent[len(before)] == {
            "role": "assistant",
            "content": talk.replies[index - 1]["content"],
        }
        if summary is not None:
            assert sent[1] == summary
    # The export is exactly what was sent (with each answer after it).
    assert [line["messages"][:-1] for line in exported] == [
        r.body["messages"] for r in talk.answers
    ]
    # explain shows the summary as the messages it stands for.
    shown = [m for m in explained.context if m.reasons == ["summary"]]
    assert len(shown) == 1 and shown[0].excerpt.startswith("summary of ")
    assert " messages, " in shown[0].excerpt and " UTC: Summary " in shown[0].excerpt


async def test_a_failing_summary_call_leaves_the_bot_answering_with_a_plain_cut(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store, context={"max_total": 20}, metrics={"port": 0}) as bot:
            bot.model.script(summaries_failing)
            talk = await long_conversation(bot, messages=60)
            registry = bot.client.metrics.registry
        logs = work_logs(store, talk.replies)
    assert len(talk.answers) == len(talk.replies) == 12
    assert all(reply["content"].startswith("echo: ") for reply in talk.replies)
    cuts = [i for i, log in enumerate(logs) if cut(log)]
    assert cuts
    failed = registry.get_sample_value("threadwise_summaries_total", {"outcome": "failed"})
    assert failed == len(cuts)
    for index in cuts:
        (failed,) = [e for e in logs[index] if e.action == "summary"]
        assert failed.status == "failure" and failed.detail.startswith("no summary (plain cut)")
    assert not any(
        m["content"].startswith("(Summary of ") for r in talk.answers for m in r.body["messages"]
    )


async def test_summarize_false_makes_plain_cuts_and_no_summary_calls():
    async with running_bot(context={"max_total": 20, "summarize": False}) as bot:
        bot.model.script(summaries_written)
        talk = await long_conversation(bot, messages=60)
    assert len(talk.answers) == 12 and talk.summaries == []


def said(request: RecordedRequest) -> set[str]:
    """The members' notes and questions a request sends (``note 12``, ``question 15``)."""
    return {
        found
        for message in request.body["messages"]
        if message["role"] == "user"
        for found in re.findall(r"(?:note|question) \d+\b", message["content"])
    }


async def test_what_a_plain_cut_left_out_is_not_sent_again_until_the_next_cut(tmp_path):
    """Without a summary, the follow-ups after a cut would select what it left out again and
    outgrow the room at once (a cut every answer or two, each losing the server's cache)."""
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store, context={"max_total": 20, "summarize": False}) as bot:
            talk = await long_conversation(bot, messages=100)
        logs = work_logs(store, talk.replies)
        triggers = [store.explain(int(reply["id"])).trigger_message_id for reply in talk.replies]
    cuts = [i for i, log in enumerate(logs) if cut(log)]
    assert len(cuts) >= 2 and not [i for i in cuts if i + 1 in cuts]
    for start, end in zip(cuts, [*cuts[1:], len(talk.answers)], strict=True):
        dropped = said(talk.answers[start - 1]) - said(talk.answers[start])
        assert dropped, start
        for index in range(start + 1, end):  # each continues the one before, without them
            before, sent = talk.answers[index - 1].body["messages"], talk.answers[index]
            assert json.dumps(sent.body["messages"][: len(before)]) == json.dumps(before)
            assert not dropped & said(sent), index
        # The work log says where the conversation was cut, up to the next cut.
        cut_at = [e.detail for log in logs[start:end] for e in log if e.action == "cut_floor"]
        assert len(cut_at) == end - start
        assert all(f"at the request for message {triggers[start]}:" in d for d in cut_at)


async def test_the_summary_survives_a_restart_and_forget_user_drops_it(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with bot_runs(store, context={"max_total": 20}) as run:
            async with run() as bot:
                bot.model.script(summaries_written)
                talk = await long_conversation(bot, messages=20)
            before = talk.answers[-1].body["messages"]
            assert before[1]["content"].startswith("(Summary of ")  # the last answer cut
            async with run() as bot:  # restarted: the store remembers the summary
                bot.model.script(summaries_written)
                await bot.discord.user_says(
                    CHANNEL, CHLOE, "and after the restart?",
                    reply_to=int(talk.replies[-1]["id"]), mention_author=False,
                )  # fmt: skip
                await bot.model.wait_for_chat_requests(len(talk.answers) + len(talk.summaries) + 1)
                await settled(bot)
                after = bot.model.chat_requests[-1].body["messages"]
        assert json.dumps(after[: len(before)]) == json.dumps(before)
        assert after[len(before)]["content"] == talk.replies[-1]["content"]
        summary = before[1]["content"]
        await store.forget_user(ELI)  # Eli's notes are in the summary
        exported = json.dumps(list(store.export()))
        explained = store.explain(int(talk.replies[-1]["id"]))
    assert summary not in exported and "Summary " not in exported
    assert [m.excerpt for m in explained.context if m.reasons == ["summary"]] == [REMOVED]


async def test_a_plain_cut_still_holds_after_a_restart(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with bot_runs(store, context={"max_total": 20, "summarize": False}) as run:
            async with run() as bot:
                talk = await long_conversation(bot, messages=20)
            logs = work_logs(store, talk.replies)
            assert cut(logs[-1])  # the last answer cut
            before = talk.answers[-1].body["messages"]
            dropped = said(talk.answers[-2]) - said(talk.answers[-1])
            async with run() as bot:  # restarted: the store remembers where it was cut
                await bot.discord.user_says(
                    CHANNEL, CHLOE, "and after the restart?",
                    reply_to=int(talk.replies[-1]["id"]), mention_author=False,
                )  # fmt: skip
                await bot.model.wait_for_chat_requests(len(talk.answers) + 1)
                await settled(bot)
                after = bot.model.chat_requests[-1]
    assert json.dumps(after.body["messages"][: len(before)]) == json.dumps(before)
    assert dropped and not dropped & said(after)


async def test_summary_model_writes_the_summaries_on_its_own_endpoint():
    async with FakeOpenAI() as small:
        small.script(summaries_written)
        async with running_bot(
            context={"max_total": 20, "summary_model": "small"},
            models={"small": {"base_url": small.url, "name": "small-model"}},
        ) as bot:
            talk = await long_conversation(bot, messages=30)
        written = small.chat_requests
    assert talk.summaries == [] and len(talk.answers) == 6  # the channel's model: answers only
    assert written and all(is_summary_request(r) for r in written)
    assert {r.body["model"] for r in written} == {"small-model"}
    assert all(r.body["max_tokens"] == ContextSettings().summary_tokens for r in written)
