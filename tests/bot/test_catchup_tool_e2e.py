"""``@bot what did I miss?`` end to end: the real client against the stand-in Discord and model,
a real SQLite store. Eli mentions the bot, the model calls ``catch_up``, and its answer passes
on the summaries: each block links exactly the messages of one conversation of the channel
(the scene's truth), nothing from before Eli left, nothing of a channel Eli cannot view; each
summary is recorded under the id the answer's work log names, and forget-user takes the
retold words out of the summaries, the tool's result and the answer."""

from __future__ import annotations

import html
import json
import re

import pytest

from bot.answering.catchup_tool import CATCH_UP, CatchupTool
from bot.config.catchup_settings import DEFAULT_CATCHUP_PROMPT
from bot.config.schema import Config
from bot.config.tool_settings import ToolSettings
from bot.demo.openai_server import Answer, CallTools, RecordedRequest
from bot.storage import Store
from bot.tools.read_page import ToolFailed
from bot.tools.toolbox import Toolbox
from tests.bot.test_catchup_e2e import GUILD, LINK, three_conversations
from tests.bot.test_context_privacy import STAFF_ONLY, add_private_channel, staff_channel_log
from tests.bot.test_read_history import deny_history
from tests.fakes.harness import BEN, BOT_ID, CHANNEL, DEV, ELI, Harness, running_bot, settled

TOOLS_ON = {"enabled": True, "read_page": False}
RESULT = re.compile(r'<tool_(?:result|error) tool="catch_up">(.*)</tool_(?:result|error)>', re.S)


def summary_prompt() -> str:
    return DEFAULT_CATCHUP_PROMPT.split("{lines}")[0]


def model(request: RecordedRequest) -> Answer | None:
    """A summary retells each message it was sent, citing it; the answer after the tool passes
    its result on as it came (as a model told to does)."""
    messages = request.messages
    if str(messages[0]["content"]).startswith(summary_prompt()):
        said = [str(m["content"]).split(": ", 1)[1] for m in messages if m["role"] == "user"]
        return Answer(text="\n".join(f"- {text} [{n}]" for n, text in enumerate(said, 1)))
    results = [m["content"] for m in messages if m.get("role") == "tool"]
    if results:
        return Answer(text=html.unescape(RESULT.fullmatch(results[-1])[1]))
    return None


async def ask(bot: Harness, user: int, text: str) -> tuple[int, str]:
    """``user`` asks the bot; their message's id and the whole answer as posted."""
    said = await bot.discord.user_says(CHANNEL, user, f"<@{BOT_ID}> {text}")
    await bot.discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=20)
    await settled(bot)
    posted = bot.discord.bot_messages(CHANNEL, after=int(said["id"]))
    return int(said["id"]), "\n".join(m["content"] for m in posted)


async def test_what_did_i_miss_passes_on_each_conversation_with_its_links(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        toolbox = Toolbox(ToolSettings(**TOOLS_ON))
        async with running_bot(store=store, toolbox=toolbox, tools=TOOLS_ON) as bot:
            away = await bot.discord.user_says(CHANNEL, ELI, "morning all, off to meetings")
            await add_private_channel(bot, staff_channel_log(tmp_path / "staff.json"))
            await bot.discord.user_says(STAFF_ONLY, BEN, "the vault code is 4417")
            await bot.discord.user_says(STAFF_ONLY, DEV, "noted, 4417 for the vault")
            truth = await three_conversations(bot)
            back = await bot.discord.user_says(CHANNEL, ELI, "back!")  # his return
            bot.model.queue(CallTools((("catch_up", "{}"),)))
            bot.model.script(model)
            trigger, answer = await ask(bot, ELI, "what did I miss?")
            requests = bot.model.chat_requests
            shown = [
                (r.body or {}).get("content") or ""
                for r in bot.discord.requests_to(pattern=f"*channels/{CHANNEL}/messages*")
            ]
        explanation = await store.explain_async(trigger)
        [tool_line] = [w.detail for w in explanation.work_log if w.action == "catchup_tool"]
        records = int(re.search(r"explain (\d+)", tool_line)[1])
        summaries = await store.explain_async(records)
        exported = json.dumps(list(store.export()))
        await store.forget_user(BEN)  # his words leave the summaries, the result, the answer
        without_ben = json.dumps(list(store.export()))
        emptied = (await store.forget_user(ELI)).interactions_emptied
    assert [t["function"]["name"] for t in requests[0].body["tools"]] == [CATCH_UP.name]
    assert len(requests) == 5  # the answer, one summary per conversation, the answer again
    blocks = [b for b in answer.split("\n\n") if LINK.search(b)]
    assert len(blocks) == 3
    for block in blocks:
        ids = {int(m) for _, _, m in LINK.findall(block)}
        (topic,) = [t for t, members in truth.items() if ids & members]
        assert ids == truth[topic]  # all its messages, none of another conversation's
    assert {(int(g), int(c)) for g, c, _ in LINK.findall(answer)} == {(GUILD, CHANNEL)}
    linked = {int(m) for _, _, m in LINK.findall(answer)}
    assert not linked & {int(away["id"]), int(back["id"]), trigger}  # before, his return, his ask
    assert answer.startswith("Conversations since the member last spoke here (")
    sent = json.dumps([r.messages for r in requests])
    assert "4417" not in sent and "4417" not in answer  # a channel Eli cannot view
    assert "-# catching up on the channel …" in shown  # while it ran
    assert "conversation 3 of 3" in " ".join(w.detail for w in summaries.work_log)
    assert any(r.startswith("catchup: ") for e in summaries.context for r in e.reasons)
    assert "the staging deploy failed" in exported  # retold, in the records and the answer
    assert "staging deploy" not in without_ben and "ramen sounds great" not in without_ben
    assert "printer on floor 2 is jammed" in without_ben  # a summary without him stays
    assert emptied == 4  # Eli's answer and the three summaries it asked for


async def test_an_asker_who_may_not_read_the_history_is_told_so_without_a_summary():
    async with running_bot(toolbox=Toolbox(ToolSettings(**TOOLS_ON)), tools=TOOLS_ON) as bot:
        await three_conversations(bot)
        await deny_history(bot, ELI)
        bot.model.queue(CallTools((("catch_up", "{}"),)))
        bot.model.script(model)
        _, answer = await ask(bot, ELI, "what did I miss?")
        requests = bot.model.chat_requests
    assert len(requests) == 2  # the answer and its second turn: no summary was asked for
    assert "cannot read this channel's history" in answer
    assert not LINK.search(answer)


async def test_a_channel_table_can_leave_the_tool_out():
    off_here = [{"match": {"channel_ids": [CHANNEL]}, "catchup": {"tool": False}}]
    async with running_bot(
        toolbox=Toolbox(ToolSettings(**TOOLS_ON)), tools=TOOLS_ON, channels=off_here
    ) as bot:
        await ask(bot, ELI, "what did I miss?")
        body = bot.model.chat_requests[-1].body
    assert "tools" not in body  # nothing else to offer here, so no tools at all


async def test_hours_that_are_no_span_are_an_error_the_model_reads():
    tool = CatchupTool(catchup=None, trigger=None, config=Config())  # refused before reading
    for hours in (-1, 0, "two", True, float("nan")):
        with pytest.raises(ToolFailed, match="hours must be a positive number"):
            await tool.run({"hours": hours})
    assert not tool.runs
