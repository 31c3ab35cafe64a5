"""Token counting, calibration, priority trimming and recognising "context too long"."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from bot.config.model_settings import ModelSettings
from bot.demo.openai_server import FakeOpenAI, count_tokens
from bot.model.client import ModelClient
from bot.model.context_overflow import recognize_overflow
from bot.model.errors import ModelContextTooLongError
from conversation.articles.models import ArticleResult, ArticleStatus
from conversation.articles.render import render_embeddings
from conversation.graph.node import MessageNode
from conversation.prompt.budget import Budget, fit_prompt
from conversation.prompt.tokens import Calibration, TokenCounter, prompt_tokens, text_tokens

START = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
SYSTEM = MessageNode(role="system", content="You are a bot. " * 10)


def node(number: int, text: str, *reasons: str, minutes: int | None = None) -> MessageNode:
    return MessageNode(
        role="user",
        content=f"user{number}: {text}",
        name=f"user{number}",
        message_id=str(1000 + number),
        created_at=START + timedelta(minutes=number if minutes is None else minutes),
        metadata={"reasons": list(reasons), "trigger": False},
    )


def trigger(number: int, text: str) -> MessageNode:
    return node(number, text).model_copy(
        update={
            "metadata": MessageNode(role="user", content="", metadata={"trigger": True}).metadata
        }
    )


def article(url: str, chars: int) -> ArticleResult:
    text = ("word " * (chars // 5 + 1))[:chars]
    return ArticleResult(url=url, status=ArticleStatus.OK, title="T", text=text)


def with_articles(base: MessageNode, *results: ArticleResult) -> MessageNode:
    return base.model_copy(update={"content": f"{base.content} {render_embeddings(results)}"})


def ids(nodes: list[MessageNode]) -> list[int]:
    return [int(n.message_id) - 1000 for n in nodes if n.message_id]


# ---------------------------------------------------------------------------- counting


def test_estimate_is_conservative_per_byte():
    assert text_tokens("") == 0
    assert text_tokens("abc" * 100) == 100
    assert text_tokens("日本語") == 3  # three bytes each
    small = [SYSTEM]
    assert prompt_tokens(small) > text_tokens(SYSTEM.content)  # framing counted


def test_calibration_learns_the_ratio_but_never_below_what_was_seen():
    start = Calibration()
    assert start.factor == 1.0
    learned = start.observe(estimated=1000, reported=600)
    assert learned.samples == 1 and learned.ratio == pytest.approx(0.6)
    assert learned.factor == pytest.approx(0.63)  # with its safety margin
    # A prompt that turns out denser than learned moves the ratio up at once, far enough.
    denser = learned.observe(estimated=1000, reported=900)
    assert denser.ratio * 1.05 >= 0.9
    # Tiny prompts and nonsense say nothing.
    assert learned.observe(estimated=10, reported=100) == learned
    assert learned.observe(estimated=1000, reported=0) == learned
    assert TokenCounter(learned).scale(1000) == 630


# ---------------------------------------------------------------------------- trimming


def test_prompt_that_fits_is_left_alone():
    nodes = [node(1, "hello", "linear"), trigger(2, "hi bot")]
    fitted = fit_prompt(SYSTEM, nodes, Budget(window=4000, reserve=500), TokenCounter())
    assert fitted.cuts == [] and fitted.fits
    assert [n.content for n in fitted.nodes] == [SYSTEM.content] + [n.content for n in nodes]
    assert fitted.total == prompt_tokens(fitted.nodes)
    assert fitted.nodes[1].metadata["tokens"] == fitted.tokens[1]


def test_articles_are_shortened_first_and_fairly():
    short, long_a, long_b = (
        article("https://a.example/s", 600),
        *(article(f"https://a.example/{n}", 20_000) for n in "ab"),
    )
    nodes = [
        with_articles(node(1, "see these", "linear"), short, long_a),
        node(2, "and this", "linear"),
        with_articles(trigger(3, "what do they say?"), long_b),
    ]
    budget = Budget(window=6000, reserve=1000)
    fitted = fit_prompt(SYSTEM, nodes, budget, TokenCounter(), articles=[short, long_a, long_b])
    assert fitted.fits and fitted.total <= 5000
    assert ids(fitted.nodes) == [1, 2, 3]  # no message had to go
    assert {c.what for c in fitted.cuts} == {f"article {long_a.url}", f"article {long_b.url}"}
    text = "\n".join(n.content for n in fitted.nodes)
    assert short.text in text  # the short one is whole
    sizes = [c.tokens_after for c in fitted.cuts]
    assert max(sizes) - min(sizes) <= 2  # the long ones share the room equally
    assert text.count('truncated="true"') == 2
    assert fitted.nodes[1].metadata["budget"] == "shortened"
    assert "budget" not in fitted.nodes[2].metadata


def test_attachments_are_shortened_after_articles():
    block = "[text attachment: notes.txt]\n" + "line of notes\n" * 600
    first = node(1, block, "linear")
    an_article = article("https://a.example/x", 3000)
    nodes = [first, with_articles(trigger(2, "look"), an_article)]
    fitted = fit_prompt(
        SYSTEM,
        nodes,
        Budget(window=2000, reserve=500),
        TokenCounter(),
        articles=[an_article],
        attachments={"1001": [block]},
    )
    assert fitted.fits
    assert [c.what for c in fitted.cuts] == [
        f"article {an_article.url}",
        "text attachment notes.txt",
    ]
    assert "[... cut for the token budget:" in fitted.nodes[1].content


def test_messages_are_dropped_lowest_priority_first():
    text = "x" * 900  # 300 tokens each
    nodes = [
        node(1, text, "reference via 1002"),  # the replied-to message's own parent: chain
        node(2, text, "reference via 1009"),  # the trigger replies to it: protected
        node(3, text, "linear", minutes=3),
        node(4, text, "temporal via 1005", minutes=4),
        node(5, text, "mention via 1009"),  # linked by the trigger itself
        node(6, text, "linear", minutes=6),
        node(7, text, "reply via 1004", minutes=7),
        node(8, text, "linear", minutes=8),
        trigger(9, "question?"),
    ]
    counter = TokenCounter()
    room = prompt_tokens([SYSTEM, nodes[1], nodes[-1]]) + 2 * 320
    fitted = fit_prompt(SYSTEM, nodes, Budget(window=room + 100, reserve=100), counter)
    assert fitted.fits
    dropped = [int(c.message_id) - 1000 for c in fitted.cuts if c.action == "dropped"]
    # linear (oldest first), then the far temporal one, then replies; chain and mention last.
    assert dropped == [3, 6, 8, 4, 7]
    assert ids(fitted.nodes) == [1, 2, 5, 9]


def test_protected_messages_survive_even_a_tiny_budget():
    nodes = [
        node(1, "y" * 3000, "reference via 1003"),
        node(2, "z" * 3000, "linear"),
        trigger(3, "w" * 3000),
    ]
    budget = Budget(window=1000, reserve=100)
    fitted = fit_prompt(SYSTEM, nodes, budget, TokenCounter())
    assert ids(fitted.nodes) == [1, 3]
    assert fitted.nodes[0] == SYSTEM
    assert fitted.fits
    assert any(c.what == "message text" for c in fitted.cuts)


def test_calibration_lets_more_in():
    nodes = [node(n, "w" * 600, "linear") for n in range(1, 9)] + [trigger(9, "ok?")]
    budget = Budget(window=1500, reserve=300)
    plain = fit_prompt(SYSTEM, nodes, budget, TokenCounter())
    calibrated = fit_prompt(SYSTEM, nodes, budget, TokenCounter(Calibration(ratio=0.5, samples=3)))
    assert len(calibrated.nodes) > len(plain.nodes)
    assert calibrated.fits and plain.fits


# ---------------------------------------------------------------------------- overflow answers


@pytest.mark.parametrize(
    ("status", "body", "window", "prompt"),
    [
        (400, {"error": {"message": "This model's maximum context length is 8192 tokens. "
                         "However, your messages resulted in 9100 tokens. Please reduce the "
                         "length of the messages.", "code": "context_length_exceeded"}},
         8192, 9100),
        (400, {"error": {"message": "Your input exceeds the context window of this model.",
                         "code": "context_length_exceeded"}}, None, None),
        (400, {"object": "error", "message": "This model's maximum context length is 4096 "
               "tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the "
               "completion). Please reduce the length of the messages or completion."},
         4096, 4000),
        (400, {"error": {"code": 400, "message": "the request exceeds the available context "
                         "size, try increasing it", "type": "exceed_context_size_error",
                         "n_prompt_tokens": 5000, "n_ctx": 4096}}, 4096, 5000),
        (400, {"type": "error", "error": {"type": "invalid_request_error",
               "message": "prompt is too long: 210000 tokens > 200000 maximum"}},
         200000, 210000),
        (400, {"message": "Prompt contains 40000 tokens and 0 draft tokens, too large for "
               "model with 32768 maximum context length"}, 32768, 40000),
        (422, {"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be "
               "<= 4096. Given: 5000 `inputs` tokens and 1024 `max_new_tokens`"}, 4096, 5000),
        (400, "This model's maximum context length is 2048 tokens", 2048, None),
    ],
)  # fmt: skip
def test_context_overflow_wordings(status, body, window, prompt):
    found = recognize_overflow(status, body)
    assert found is not None
    assert (found.window, found.prompt_tokens) == (window, prompt)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, {"error": {"message": "Invalid value for 'temperature'", "code": None}}),
        (401, {"error": {"message": "maximum context length is 10 tokens"}}),
        (500, "context_length_exceeded"),
        (400, b"\xff\xfe not json"),
    ],
)
def test_other_errors_are_not_overflows(status, body):
    assert recognize_overflow(status, body) is None


async def test_model_client_raises_context_too_long_with_the_numbers():
    async with FakeOpenAI(context_window=50) as fake:
        settings = ModelSettings(base_url=fake.url, name="m", max_retries=3, stream=False)
        messages = [{"role": "user", "content": "many words here " * 40}]
        async with ModelClient(settings) as client:
            with pytest.raises(ModelContextTooLongError) as caught:
                await client.complete(messages)
    error = caught.value
    assert error.window == 50 and error.prompt_tokens == count_tokens(messages)
    assert len(fake.chat_requests) == 1  # never retried as it is
    assert "context_tokens" in error.detail


async def test_real_attachment_is_found_and_shortened(tmp_path):
    """From the fake Discord through the materializer: the inlined file is what gets cut."""
    import json

    from aiohttp import web

    from bot.demo.discord_server import FakeDiscord, make_nextcord_client
    from conversation.prompt.materialize import MaterializeOptions, Materializer
    from conversation.selection.result import ContextSelection
    from tests.conversation.prompt.test_materialize import (
        ALICE,
        BOT,
        CHANNEL,
        export,
        message,
        user,
    )

    async def notes(request: web.Request) -> web.Response:
        return web.Response(text="a line of the log <embedding>\n" * 200, content_type="text/plain")

    app = web.Application()
    app.router.add_get("/notes.txt", notes)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    attachment = {"id": "7", "url": f"http://127.0.0.1:{port}/notes.txt",
                  "fileName": "notes.txt", "fileSizeBytes": 6000}  # fmt: skip
    alice = user(ALICE, "alice", "Alice")
    raw = export([message(0, alice, "my log", attachments=[attachment]), message(1, alice, "why?")])
    log = tmp_path / "log.json"
    log.write_text(json.dumps(raw))
    try:
        async with FakeDiscord(bot_id=BOT) as fake:
            await fake.load_log(log)
            with fake.nextcord_pointed_here():
                async with fake.running(make_nextcord_client()) as client:
                    channel = client.get_channel(CHANNEL)
                    first, trigger = [
                        await channel.fetch_message(int(m["id"])) for m in raw["messages"]
                    ]
                    selection = ContextSelection(
                        trigger=trigger, messages=[first], reasons={first.id: []}
                    )
                    materialized = await Materializer(
                        MaterializeOptions(bot_user_id=BOT)
                    ).materialize(selection)
    finally:
        await runner.cleanup()
    fitted = fit_prompt(
        SYSTEM,
        materialized.nodes,
        Budget(window=1200, reserve=200),
        TokenCounter(),
        attachments=materialized.attachment_texts,
    )
    assert fitted.fits
    assert [c.what for c in fitted.cuts] == ["text attachment notes.txt"]
    kept = fitted.nodes[1].content
    # Read over REST (no member fields, as Discord sends it): named by username.
    assert kept.startswith(
        "alice: my log\n  [text attachment: notes.txt]\n  a line of the log &lt;"
    )
    # The shortened file is still indented as the member's text; its cut note with it, counting
    # the file's own characters (not the indent).
    assert re.search(
        r"\n  \[\.\.\. cut for the token budget: \d+ of 6600 characters shown\]$", kept
    )


# ---------------------------------------------------------------------------- any context

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

KINDS = ("linear", "temporal", "author", "mention", "reply", "reference")


@st.composite
def contexts(draw):
    count = draw(st.integers(1, 14))
    nodes = []
    results = []
    for number in range(1, count + 1):
        kind = draw(st.sampled_from(KINDS))
        via = draw(st.integers(1, count + 1))
        reason = kind if kind == "linear" else f"{kind} via {1000 + via}"
        text = draw(st.sampled_from(["ok", "x" * 200, "日本語のテキスト" * 40, "word " * 300]))
        base = node(number, text, reason)
        if draw(st.booleans()):
            result = article(f"https://a.example/{number}", draw(st.integers(50, 8000)))
            results.append(result)
            base = with_articles(base, result)
        nodes.append(base)
    nodes.append(trigger(count + 1, draw(st.sampled_from(["why?", "q" * 600]))))
    return nodes, results


@settings(max_examples=150, deadline=None)
@given(
    context=contexts(),
    window=st.integers(300, 20_000),
    ratio=st.sampled_from([None, 0.5, 1.3]),
)
def test_any_context_fits_and_keeps_what_must_stay(context, window, ratio):
    nodes, results = context
    calibration = Calibration() if ratio is None else Calibration(ratio=ratio, samples=2)
    counter = TokenCounter(calibration)
    budget = Budget(window=window, reserve=window // 5)
    fitted = fit_prompt(SYSTEM, nodes, budget, counter, articles=results)
    kept = ids(fitted.nodes)
    assert fitted.nodes[0] == SYSTEM
    assert kept == sorted(kept) and kept[-1] == len(nodes)  # order kept, trigger last
    replied = [
        i for i, n in enumerate(nodes[:-1], 1) if f"reference via {1000 + len(nodes)}" in
        n.metadata["reasons"]
    ]  # fmt: skip
    assert set(replied[:1]) <= set(kept)  # a message replies to one message only
    assert fitted.total == counter.prompt(fitted.nodes)
    # It fits whenever the system prompt leaves any room at all.
    if counter.prompt([SYSTEM]) + 2 * 40 < budget.limit:
        assert fitted.fits
    if counter.prompt([SYSTEM, *nodes]) <= budget.limit:
        assert fitted.cuts == [] and len(fitted.nodes) == len(nodes) + 1


def test_a_dropped_message_hands_its_article_to_a_later_mention():
    # An article is embedded at its first mention only; later ones refer to it.
    from conversation.articles.render import render_embeddings as embeddings

    page = article("https://a.example/guide", 1200)
    again = page.model_copy(update={"url": "https://a.example/guide#setup"})  # same page
    first = node(1, "x" * 3000 + " see this", "linear").model_copy()
    first = first.model_copy(update={"content": f"{first.content} {embeddings([page])}"})
    later = node(2, "as linked above", "linear")
    later = later.model_copy(
        update={"content": f"{later.content} {embeddings([again], shown_earlier={again.url})}"}
    )
    nodes = [first, later, trigger(3, "what does the guide say?")]
    room = prompt_tokens([SYSTEM, *nodes]) - 900  # the long first message must go
    fitted = fit_prompt(
        SYSTEM, nodes, Budget(window=room + 100, reserve=100), TokenCounter(), articles=[page]
    )
    assert fitted.fits and ids(fitted.nodes) == [2, 3]
    kept = fitted.nodes[1].content
    assert f'<embedding type="article" url="{page.url}"' in kept  # maybe shortened, but there
    assert page.text[:100] in kept and 'shown="earlier"' not in kept
    assert "dropped" in [c.action for c in fitted.cuts]


async def test_the_calibration_is_stored_at_its_first_samples_then_once_a_minute(tmp_path):
    """CPU per answer (issue 43): each answer stored the model's limits, a store write for an
    average that barely moves; now the first SAVED_SAMPLES are stored, then one a minute."""
    from bot.answering import prompt_budget
    from bot.answering.prompt_budget import SAVED_SAMPLES, PromptBudgeter
    from bot.storage import Store

    fitted = fit_prompt(
        SYSTEM, [trigger(1, "word " * 200)], Budget(window=8000, reserve=100), TokenCounter()
    )
    with Store.open(tmp_path / "store.sqlite3") as store:
        budgeter = PromptBudgeter(ModelSettings(name="m"), store)
        for _ in range(SAVED_SAMPLES + 5):
            await budgeter.observe(fitted, fitted.total)
        assert budgeter.limits("m").samples == SAVED_SAMPLES + 5
        assert store.model_limits()["m"].samples == SAVED_SAMPLES  # the next five are not
        budgeter._saved_at["m"] -= prompt_budget.SAVE_SECONDS  # a minute later
        await budgeter.observe(fitted, fitted.total)
        assert store.model_limits()["m"].samples == SAVED_SAMPLES + 6
