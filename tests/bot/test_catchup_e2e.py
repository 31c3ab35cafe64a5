"""``/catchup`` end to end: the real client against the stand-in Discord and model, a real SQLite
store. Three conversations interleave while Eli is away; each summary links only the messages of
its own conversation (the scene's truth), a number the model invents links nowhere, an asker
who may not read the history gets nothing, and each summary is recorded and explained."""

from __future__ import annotations

import json
import re

from bot.demo.openai_server import Answer, RecordedRequest
from bot.storage import Store
from tests.bot.test_read_history import ANA, deny_history
from tests.fakes.harness import BEN, CHANNEL, CHLOE, DEV, ELI, Harness, running_bot

LINK = re.compile(r"https://discord\.com/channels/(\d+)/(\d+)/(\d+)")
GUILD = 1300000000000000000


def summarise(request: RecordedRequest) -> Answer:
    """A model that summarises in two lines, citing every message it was given and one more."""
    numbered = [m for m in request.messages if m["role"] == "user"]
    first = " ".join(f"[{n}]" for n in range(1, len(numbered) // 2 + 1))
    rest = " ".join(f"[{n}]" for n in range(len(numbered) // 2 + 1, len(numbered) + 1))
    return Answer(text=f"- They started on it {first}\n- And went on {rest} [{len(numbered) + 7}]")


async def three_conversations(bot: Harness) -> dict[str, set[int]]:
    """The scene: which messages belong to which conversation (its truth)."""
    says = bot.discord.user_says
    truth: dict[str, set[int]] = {"deploy": set(), "lunch": set(), "printer": set()}

    async def say(topic: str, author: int, text: str, reply_to: int | None = None) -> int:
        message = await says(CHANNEL, author, text, reply_to=reply_to)
        truth[topic].add(int(message["id"]))
        return int(message["id"])

    a1 = await say("deploy", BEN, "the staging deploy failed on the migration step")
    b1 = await say("lunch", CHLOE, "who wants ramen for lunch today?")
    await say("deploy", DEV, "the migration needs a column default, patching it", a1)
    c1 = await say("printer", ANA, "the printer on floor 2 is jammed again")
    b2 = await say("lunch", BEN, "ramen sounds great, 12:30?", b1)
    await say("printer", CHLOE, "I called facilities about that printer", c1)
    # Without the reply button the builder's score joins them (its words, whom it addresses).
    await say("deploy", BEN, "thanks dev, rerunning the staging deploy with the migration now")
    await say("lunch", DEV, "count me in for ramen", b2)
    await say("printer", ANA, "chloe: facilities fixed the printer tray")
    return truth


async def catchup(bot: Harness, user: int) -> dict:
    record = await bot.discord.invoke_command(CHANNEL, user, "catchup")
    (message,) = await bot.discord.wait_for_interaction_messages(record, 1, timeout=20)
    return message | {"interaction": int(record.id)}


async def test_catchup_links_each_summary_only_to_its_own_conversation(tmp_path):
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            bot.model.script(summarise)
            away = await bot.discord.user_says(CHANNEL, ELI, "morning all, off to meetings")
            truth = await three_conversations(bot)
            shown = await catchup(bot, ELI)
        explanation = await store.explain_async(shown["interaction"])
        exported = list(store.export())
        await store.forget_user(BEN)  # his messages leave the summaries' records
        without_ben = json.dumps(list(store.export()))
        emptied = (await store.forget_user(ELI)).interactions_emptied  # the asker's, emptied
    assert shown["flags"] & 64  # ephemeral: only Eli sees it
    blocks = [b for b in shown["content"].split("\n\n") if LINK.search(b)]
    assert len(blocks) == 3 and len(bot.model.chat_requests) == 3  # one call per conversation
    linked = [{int(m) for g, c, m in LINK.findall(block)} for block in blocks]
    for ids in linked:
        (topic,) = [t for t, members in truth.items() if ids & members]
        assert ids == truth[topic]  # all its messages, none of another conversation's
    every = {int(m) for g, c, m in LINK.findall(shown["content"])}
    assert int(away["id"]) not in every  # before Eli left: not missed
    assert {(int(g), int(c)) for g, c, _ in LINK.findall(shown["content"])} == {(GUILD, CHANNEL)}
    assert len(exported) == 3  # each summary recorded like an answer
    reasons = [r for entry in explanation.context for r in entry.reasons]
    assert any("replies to it" in r for r in reasons)
    assert any(r.startswith("catchup: score") for r in reasons)  # the printer's last one
    assert any(e.action == "catchup_links" for e in explanation.work_log)  # the invented one
    assert "staging deploy" in json.dumps(exported) and "staging deploy" not in without_ben
    # The summaries that drew on Ben (deploy, lunch) go with him; the printer's stays.
    assert json.dumps(without_ben).count("They started on it") == 1
    assert emptied == 3


async def test_nothing_to_catch_up_on_says_so_without_a_model_call():
    async with running_bot() as bot:
        await three_conversations(bot)
        await bot.discord.user_says(CHANNEL, ELI, "back, I read it all")
        shown = await catchup(bot, ELI)
    assert shown["content"].startswith("Nothing to catch up on")
    assert not bot.model.chat_requests


async def test_an_asker_who_may_not_read_the_history_gets_nothing_of_it():
    async with running_bot() as bot:
        bot.model.script(summarise)
        await three_conversations(bot)
        await deny_history(bot, ELI)
        shown = await catchup(bot, ELI)
    assert "cannot read this channel's history" in shown["content"]
    assert not LINK.search(shown["content"]) and not bot.model.chat_requests


async def test_hours_reads_the_span_asked_for_even_after_the_asker_spoke():
    async with running_bot() as bot:
        bot.model.script(summarise)
        truth = await three_conversations(bot)
        await bot.discord.user_says(CHANNEL, ELI, "back, I read it all")
        hour = [{"name": "hours", "type": 10, "value": 1}]
        record = await bot.discord.invoke_command(CHANNEL, ELI, "catchup", hour)
        (shown,) = await bot.discord.wait_for_interaction_messages(record, 1, timeout=20)
    linked = {int(m) for _, _, m in LINK.findall(shown["content"])}
    assert linked >= set().union(*truth.values())  # before Eli's last word too (and it)
    assert shown["content"].startswith("Since <t:")


async def test_history_the_bot_cannot_read_is_said_in_one_line():
    async with running_bot() as bot:
        await three_conversations(bot)
        bot.discord.forbid_history(CHANNEL)
        refused = await catchup(bot, ELI)
        bot.discord.clear_rules()
        # nextcord retries a 5xx a few times: the rule outlasts them.
        bot.discord.add_error(f"/channels/{CHANNEL}/messages*", 503, method="GET", count=None)
        failed = await catchup(bot, ELI)
    assert refused["content"].startswith("I cannot read this channel's history")
    assert failed["content"].startswith("I could not read this channel's history just now")
    assert not bot.model.chat_requests


async def test_catchup_does_not_retell_what_forget_user_took_back(tmp_path):
    """Ben is forgotten while the bot runs (the store's row, polled): Eli's catch-up neither
    sends the model his messages or the replies to him, nor links them."""
    import asyncio

    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store) as bot:
            bot.model.script(summarise)
            await bot.discord.user_says(CHANNEL, ELI, "morning all, off to meetings")
            truth = await three_conversations(bot)
            await store.forget_user(BEN)
            for _ in range(100):
                if BEN in bot.client.answerer.forgotten.at:
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the running bot did not learn of the forget within 10 s")
            shown = await catchup(bot, ELI)
    sent = json.dumps([r.messages for r in bot.model.chat_requests])
    linked = {int(m) for _, _, m in LINK.findall(shown["content"])}
    assert bot.model.chat_requests  # the printer's conversation is still told
    for said in ("staging deploy", "ramen sounds great", "patching it", "count me in"):
        assert said not in sent  # his, and the replies to him
    assert linked and linked <= truth["printer"] | truth["lunch"]
    assert not linked & truth["deploy"]


async def test_a_public_catchup_written_before_a_forget_is_not_read_again(tmp_path):
    """With ``ephemeral = false`` the catch-up is the bot's message in the channel, retelling
    Ben, and it replies to no one: after Ben is forgotten, no answer sends it to the model."""
    import asyncio

    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store, catchup={"ephemeral": False}) as bot:
            bot.model.script(lambda request: Answer(text="- Ben said the deploy broke [1]"))
            await bot.discord.user_says(CHANNEL, ELI, "morning all, off to meetings")
            await three_conversations(bot)
            shown = await catchup(bot, ELI)
            assert not shown["flags"] & 64 and "Ben said the deploy broke" in shown["content"]
            await store.forget_user(BEN)
            for _ in range(100):
                if BEN in bot.client.answerer.forgotten.at:
                    break
                await asyncio.sleep(0.1)
            said = await bot.discord.user_says(CHANNEL, CHLOE, "<@1300000000000000100> hi?")
            await bot.discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=10)
    assert "Ben said the deploy broke" not in json.dumps(bot.model.chat_requests[-1].messages)


async def test_the_grouping_runs_off_the_event_loop(monkeypatch):
    """Grouping scores every message read (seconds for thousands): never on the event loop,
    where it would hold every channel's answers and the gateway."""
    import threading

    from bot.answering import catchup as catchup_module

    grouped_on: list[threading.Thread] = []
    real = catchup_module.group_conversations

    def grouping(*args, **kwargs):
        grouped_on.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(catchup_module, "group_conversations", grouping)
    async with running_bot() as bot:
        bot.model.script(summarise)
        await three_conversations(bot)
        shown = await catchup(bot, ELI)
    assert LINK.search(shown["content"])
    assert grouped_on and threading.main_thread() not in grouped_on
