"""The tool loop's own cost per round, beside the model requests and the tool itself.

An answer of ``--rounds`` tool rounds runs against the local fake OpenAI server (streamed): each
round the model asks for ``read_page`` on a saved page (the real article reader, answered
from its cache after the first read, so the tool itself costs next to nothing), then it
answers. The same requests are then sent again one by one through ``ModelClient.complete``,
with the same answers, in the same process: the baseline. The difference, divided by the
rounds, is what the loop adds per round: reading the calls, running the toolbox (parallel
gather, timeout, cap, defusing, escaping), building the next request.

A round on the test MCP server over stdio (``echo``) is timed too, for the tool's own cost.

Run: ``python -m bench.tools [--answers 30] [--rounds 4]``
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.config.model_settings import ModelSettings
from bot.config.tool_settings import McpServerSettings, ToolSettings
from bot.demo.openai_server import Answer, CallTools, FakeOpenAI
from bot.model.client import ModelClient
from bot.model.tool_loop import complete_with_tools
from bot.tools.mcp_servers import McpServers
from bot.tools.page_hosts import hosts_in
from bot.tools.read_page import PageReader
from bot.tools.spec import ToolCallRequest
from bot.tools.toolbox import Toolbox
from conversation.articles import ArticleService
from conversation.common import ArticleSettings

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi " * 200}]
PAGE_URL = "https://wiki.example.org/deploy"
PAGE = (
    "<html><head><title>Deploying</title></head><body><article>"
    + "<p>Run the migrations before you deploy, or it breaks. @everyone take note.</p>" * 40
    + "</article></body></html>"
)


async def run(answers: int, rounds: int) -> None:
    folder = Path(tempfile.mkdtemp())
    (folder / "page.html").write_text(PAGE)
    settings = ArticleSettings()
    offline = {PAGE_URL: folder / "page.html"}
    call = CallTools((("read_page", f'{{"url": "{PAGE_URL}"}}'),))
    async with (
        FakeOpenAI() as fake,
        ArticleService(settings, offline_pages=offline) as articles,
        ModelClient(ModelSettings(base_url=fake.url, name="fake-model")) as model,
    ):
        toolbox = Toolbox(ToolSettings(enabled=True), pages=PageReader(articles))
        toolbox = toolbox.for_prompt(hosts_in(PAGE_URL))  # a named page

        def script(request):  # type: ignore[no-untyped-def]
            done = sum(1 for m in request.messages if m.get("role") == "tool")
            return call if done < rounds and "tool_choice" not in request.body else Answer("ok")

        fake.script(script)

        async def looped() -> list[dict]:
            before = len(fake.chat_requests)
            result = await complete_with_tools(model, MESSAGES, toolbox, max_steps=rounds + 1)
            assert len(result.rounds) == rounds, result.rounds
            assert all(o.ok for r in result.rounds for o in r.outcomes), result.rounds[0]
            return [r.body for r in fake.chat_requests[before:]]

        bodies = await looped()  # warm: the page read and cached, connections open
        specs = toolbox.specs()

        async def requests_only() -> None:
            for body in bodies:
                await model.complete(body["messages"], tools=specs)

        await requests_only()
        loop_wall = loop_cpu = base_wall = base_cpu = 0.0
        for _ in range(answers):  # interleaved, so both see the same machine
            wall, cpu = time.perf_counter(), time.process_time()
            await looped()
            loop_wall += time.perf_counter() - wall
            loop_cpu += time.process_time() - cpu
            wall, cpu = time.perf_counter(), time.process_time()
            await requests_only()
            base_wall += time.perf_counter() - wall
            base_cpu += time.process_time() - cpu
    per = answers * rounds
    print(f"{answers} answers of {rounds} tool rounds (+1 answering request each)")
    print(
        f"requests alone  {base_wall / answers * 1000:7.2f} ms wall "
        f"{base_cpu / answers * 1000:7.2f} ms cpu per answer"
    )
    print(
        f"with the loop   {loop_wall / answers * 1000:7.2f} ms wall "
        f"{loop_cpu / answers * 1000:7.2f} ms cpu per answer "
        f"(ratio {loop_wall / base_wall:.2f}x wall)"
    )
    print(
        f"loop overhead   {(loop_wall - base_wall) / per * 1000:7.2f} ms wall "
        f"{(loop_cpu - base_cpu) / per * 1000:7.2f} ms cpu per round (target < 5 ms)"
    )
    await mcp_round(answers)


async def mcp_round(calls: int) -> None:
    fake = Path(__file__).resolve().parents[1] / "tests" / "fakes" / "mcp_server.py"
    server = McpServerSettings(name="bench", command=sys.executable, args=[str(fake)])
    servers = McpServers.from_settings([server])
    await servers.start(wait=30)
    try:
        toolbox = Toolbox(ToolSettings(enabled=True, read_page=False), servers=servers)
        request = [ToolCallRequest(id="c", name="echo", arguments='{"text": "hi"}')]
        await toolbox.run(request)
        wall = time.perf_counter()
        for _ in range(calls):
            await toolbox.run(request)
        print(f"MCP echo (stdio) {(time.perf_counter() - wall) / calls * 1000:6.2f} ms per call")
    finally:
        await servers.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    asyncio.run(run(args.answers, args.rounds))


if __name__ == "__main__":
    main()
