"""The token budget end to end: the bot, fake Discord, a fake model with a real context window."""

from __future__ import annotations

import pytest

from bot.answering.prompt_budget import PromptBudgeter
from bot.config.model_settings import ModelSettings
from bot.demo.openai_server import count_tokens
from bot.model.errors import ModelContextTooLongError
from bot.storage import Store, render_text
from conversation.graph.node import MessageNode
from conversation.prompt.budget import Budget, FittedPrompt
from tests.fakes.harness import BEN, BOT_ID, CHANNEL, CHLOE, DEV, ELI, running_bot, settled

WORDS = [
    "replication",
    "lag",
    "grows",
    "whenever",
    "the",
    "nightly",
    "vacuum",
    "runs",
    "against",
    "the",
    "archive",
    "tables",
    "while",
    "backups",
    "stream",
    "to",
    "the",
    "remote",
    "bucket",
    "and",
    "nobody",
    "watches",
    "the",
    "dashboards",
    "closely",
    "enough",
]


def long_text(seed: int, words: int = 160) -> str:
    return " ".join(WORDS[(seed * 7 + i) % len(WORDS)] for i in range(words)) + f" ({seed})"


async def chatter(bot, count: int) -> list[dict]:
    """``count`` long messages from several people, the channel's conversation."""
    people = (BEN, DEV, ELI)
    said = []
    for n in range(count):
        said.append(await bot.discord.user_says(CHANNEL, people[n % 3], long_text(n)))
    return said


async def test_long_conversation_is_cut_to_the_window(tmp_path):
    window = 1600
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(
            store=store,
            fake_model={"context_window": window},
            model={"context_tokens": window, "reserve_tokens": 200},
        ) as bot:
            said = await chatter(bot, 14)
            target = said[2]  # an old message, far behind the recent ones
            reply = await bot.answer_to(
                CHANNEL, CHLOE, f"<@{BOT_ID}> is this still true?", reply_to=int(target["id"])
            )
            await settled(bot)
            requests = bot.model.chat_requests
            explanation = await store.explain_async(int(reply["id"]))
            command = await bot.discord.invoke_command(CHANNEL, CHLOE, "context")
            shown = await bot.discord.wait_for_interaction_response(command, timeout=10)
    assert len(requests) == 1  # fitted before sending: the server never refused it
    sent = requests[0].messages
    assert count_tokens(sent) <= window - 200
    assert reply["content"].startswith("echo:")
    assert sent[0]["role"] == "system" and "Threadwise" in sent[0]["content"]
    assert "is this still true?" in sent[-1]["content"]
    assert target["content"] in "\n".join(m["content"] for m in sent)  # the replied-to message
    # Something had to go, and the explanation says what and what it cost.
    cuts = [e.detail for e in explanation.work_log if e.action == "budget_cut"]
    assert cuts and all(c.startswith("dropped: budget, message") for c in cuts)
    assert len(sent) < 1 + 14 + 1
    budget = [e for e in explanation.work_log if e.action == "budget"]
    assert budget and budget[0].status == "success"
    total = int(budget[0].detail.split("~")[1].split()[0])
    assert count_tokens(sent) <= total <= window - 200  # our count errs on the safe side
    assert all(m.tokens for m in explanation.context if m.message_id is not None)
    # The least related messages go first: the latest message of Eli, whom Chloé answers,
    # survives (the learned score ranks it above the others' chatter).
    assert said[-3]["content"] in "\n".join(m["content"] for m in sent)
    # What /context and `explain` show: the budget, tokens per message, what was cut.
    text = render_text(explanation)
    assert f"Token budget: prompt ~{total} of {window - 200} tokens" in text
    assert "dropped: budget, message" in text and " tokens): " in text
    assert len(render_text(explanation, limit=2000)) <= 2000
    slash = shown["data"]["content"]  # /context in Discord says the same, in 2000 characters
    assert f"Token budget: prompt ~{total} of" in slash and " tokens): " in slash


@pytest.mark.parametrize("wording", ["openai", "vllm", "llamacpp"])
async def test_context_too_long_is_recovered_and_the_window_remembered(tmp_path, wording):
    window = 1500
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(
            store=store, fake_model={"context_window": window, "overflow_wording": wording}
        ) as bot:  # configured for 8192 tokens: the server knows better
            said = await chatter(bot, 14)
            reply = await bot.answer_to(
                CHANNEL, CHLOE, f"<@{BOT_ID}> summarise please", reply_to=int(said[5]["id"])
            )
            await settled(bot)
            requests = bot.model.chat_requests
            config = bot.client.config
        exported = list(store.export())
        explanation = store.explain(int(reply["id"]))
        learned = PromptBudgeter(config.model, store)  # as after a restart
    assert reply["content"].startswith("echo:")  # an answer, not an error
    assert len(requests) == 2
    rejected, accepted = requests[0].messages, requests[1].messages
    assert count_tokens(rejected) > window
    assert count_tokens(accepted) <= window
    assert accepted[0] == rejected[0]  # the same system prompt
    assert "summarise please" in accepted[-1]["content"]
    assert said[5]["content"] in "\n".join(m["content"] for m in accepted)
    # The record and the export hold the prompt that was accepted, not the refused one.
    assert len(exported) == 1
    assert exported[0]["messages"][:-1] == accepted
    assert len(explanation.context) == len(accepted)
    assert [e.action for e in explanation.work_log].count("budget_refit") == 1
    assert learned.budget().window == window
    assert learned.limits().samples >= 1  # the accepted answer's usage calibrated the count


async def test_refusal_without_numbers_still_gets_an_answer():
    async with running_bot(
        fake_model={"context_window": 2500, "overflow_wording": "bare"},
        model={"reserve_tokens": 100},
    ) as bot:
        said = await chatter(bot, 14)
        reply = await bot.answer_to(CHANNEL, CHLOE, f"<@{BOT_ID}> so?", reply_to=int(said[9]["id"]))
        requests = bot.model.chat_requests
    assert reply["content"].startswith("echo:")
    assert 2 <= len(requests) <= 3
    sizes = [count_tokens(r.messages) for r in requests]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] <= 2500


async def test_budgeter_learns_and_remembers(tmp_path):
    settings = ModelSettings(name="m", context_tokens=8192, reserve_tokens=1024)
    nodes = [
        MessageNode(role="system", content="s" * 300),
        MessageNode(role="user", content="u" * 9000),
    ]
    fitted = FittedPrompt(
        nodes=nodes, tokens=[0, 0], total=3120, budget=Budget(window=8192, reserve=1024)
    )
    with Store.open(tmp_path / "s.sqlite3") as store:
        budgeter = PromptBudgeter(settings, store)
        assert budgeter.budget() == Budget(window=8192, reserve=1024)
        await budgeter.observe(fitted, 2000)
        refused = ModelContextTooLongError("too long", status=400, window=3000)
        smaller = await budgeter.after_overflow(refused, fitted)
        small = FittedPrompt(nodes=nodes, tokens=[0, 0], total=1500, budget=smaller)
        bare = await budgeter.after_overflow(ModelContextTooLongError("too long"), small)
        again = PromptBudgeter(settings, store)  # a restart
        # The operator gave the server a larger window and said so: the learned one is dropped.
        larger = settings.model_copy(update={"context_tokens": 16384})
        assert PromptBudgeter(larger, store).budget().window == 16384
    assert smaller == Budget(window=3000, reserve=1024)
    assert bare.limit == 1050  # nothing stated: ask for 30% less than was refused
    assert again.budget().window == 3000
    limits = again.limits()
    assert limits.samples == 1 and limits.ratio == pytest.approx(2000 / 3114, rel=0.01)
    assert again.counter().scale(1000) < 1000  # calibrated below the conservative estimate
