"""Images from tools end to end: the real bot on the stand-in Discord and model, a real stdio
MCP server whose ``draw`` tool returns a PNG. The image arrives as an attachment of the answer,
byte for byte; the model read a line naming it, the record keeps a reference (no bytes), and the
next request in the conversation describes it as text. Bytes that only claim to be an image,
and images past the answer's limit, are not attached, and the model is told why."""

from __future__ import annotations

import base64
import hashlib
import sys
from collections.abc import AsyncIterator

import pytest

from bot.config.tool_settings import McpServerSettings, ToolSettings
from bot.demo.openai_server import Answer, CallTools
from bot.storage import Store
from bot.tools.mcp_servers import McpServers
from bot.tools.toolbox import Toolbox
from tests.fakes.harness import BOT_ID, CHANNEL, CHLOE, running_bot, settled
from tests.fakes.mcp_server import png
from tests.fakes.zygote import fake_mcp_args

TOOLS_ON = {"enabled": True, "read_page": False, "call_timeout_seconds": 5.0}


@pytest.fixture
async def toolbox() -> AsyncIterator[Toolbox]:
    server = McpServerSettings(
        name="pics", command=sys.executable, args=fake_mcp_args(), env={"FAKE_MCP_IMAGES": "1"}
    )
    servers = McpServers.from_settings([server], restart_delays=(0.1,))
    await servers.start(wait=30)
    try:
        yield Toolbox(ToolSettings(**TOOLS_ON), servers=servers)
    finally:
        await servers.close()


def tool_results(request) -> list[str]:
    return [m["content"] for m in request.messages if m.get("role") == "tool"]


async def asked(bot, text: str) -> dict:
    said = await bot.discord.user_says(CHANNEL, CHLOE, f"<@{BOT_ID}> {text}")
    reply = await bot.discord.wait_for_bot_message(CHANNEL, after=int(said["id"]), timeout=10)
    await settled(bot)
    return bot.discord.message(CHANNEL, int(reply["id"]))


async def test_a_tools_image_arrives_as_an_attachment(tmp_path, toolbox) -> None:
    expected = png(64, 32)
    with Store.open(tmp_path / "store.sqlite3") as store:
        async with running_bot(store=store, toolbox=toolbox, tools=TOOLS_ON) as bot:
            bot.model.queue(CallTools((("draw", '{"width": 64, "height": 32}'),)))
            bot.model.queue(Answer(text="Here is your picture."))
            reply = await asked(bot, "draw me something grey")
            [during] = tool_results(bot.model.chat_requests[-1])
            bot.model.queue(Answer(text="It is grey."))
            await asked(bot, "what colour was it?")
            follow_up = bot.model.chat_requests[-1].body["messages"]
            [attachment] = reply["attachments"]
            uploaded = bot.discord.attachment_bytes(attachment)
        explanation = await store.explain_async(int(reply["id"]))
    assert reply["content"] == "Here is your picture."
    assert uploaded == expected
    assert attachment["filename"] == "draw-1.png"
    assert attachment["content_type"] == "image/png"
    assert (attachment["width"], attachment["height"]) == (64, 32)
    line = "[image attached: draw-1.png, 64x32 image/png from tool draw]"
    assert "drew 64x32" in during and line in during  # the model read the line, not the bytes
    assert base64.b64encode(expected).decode()[:40] not in during
    [kept] = [w.detail for w in explanation.work_log if w.action == "tool_image"]
    digest = hashlib.sha256(expected).hexdigest()
    assert kept == f"draw-1.png image/png {len(expected)} bytes sha256:{digest}"
    answers = [m["content"] for m in follow_up if m["role"] == "assistant"]
    assert f"Here is your picture.\n{line}" in answers  # the next request describes it


async def test_not_an_image_or_past_the_limit_is_not_attached(toolbox) -> None:
    tools = TOOLS_ON | {"max_images_per_answer": 1}
    async with running_bot(toolbox=toolbox, tools=tools) as bot:
        bot.model.queue(
            CallTools((("draw", '{"fake": true}'), ("draw", "{}"), ("draw", '{"width": 8}'))),
            Answer(text="Done."),
        )
        reply = await asked(bot, "draw three")
        results = tool_results(bot.model.chat_requests[-1])
    assert results[0].count("[image not attached: not a PNG, JPEG, GIF or WebP image]") == 1
    # The calls run at once: whichever image came first is attached, the other is refused.
    attached = [r for r in results[1:] if "[image attached: draw-1.png, " in r]
    refused = [r for r in results[1:] if "[image not attached: at most 1 images per answer]" in r]
    assert len(attached) == len(refused) == 1
    [attachment] = reply["attachments"]
    assert attachment["filename"] == "draw-1.png" and attachment["content_type"] == "image/png"
