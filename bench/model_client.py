"""Cost of the model client per streamed answer, against a bare read of the same stream.

Both read the same answer from the local fake OpenAI server (``--chunks`` events of 8
characters), in the same process, one after the other, ``--answers`` times each:

* baseline: ``httpx2`` posts the request and ``json.loads`` each ``data:`` line, nothing else;
* client: ``ModelClient.complete`` on ``provider = "openai"`` (the ``openai`` SDK sends the
  request and decodes the events; retries, idle timeouts and delivery on top).

Printed: milliseconds of wall and CPU time per answer and per event, and the ratio to the
baseline. The fake server runs in the same process, so its share is in both figures.

Run: ``python -m bench.model_client [--answers 200] [--chunks 100]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx2

from bot.config.model_settings import ModelSettings
from bot.demo.openai_server import Answer, FakeOpenAI
from bot.model.client import ModelClient

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi " * 200}]


async def timed(answers: int, one: Callable[[], Awaitable[str]]) -> tuple[float, float]:
    await one()  # warm: connection open, code paths loaded
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(answers):
        await one()
    return (time.perf_counter() - wall) / answers, (time.process_time() - cpu) / answers


async def run(answers: int, chunks: int) -> None:
    text = "x" * (8 * chunks)
    async with FakeOpenAI(default=Answer(text=text, chunk_chars=8)) as fake:
        body = {"model": "fake-model", "messages": MESSAGES, "stream": True}

        async with httpx2.AsyncClient() as http:

            async def bare() -> str:
                parts = []
                url = f"{fake.url}/chat/completions"
                async with http.stream("POST", url, json=body) as response:
                    async for line in response.aiter_lines():
                        if line.startswith("data: ") and line != "data: [DONE]":
                            delta = json.loads(line[6:])["choices"][0]["delta"]
                            parts.append(delta.get("content") or "")
                return "".join(parts)

            base = await timed(answers, bare)

        async with ModelClient(ModelSettings(base_url=fake.url, name="fake-model")) as client:

            async def sdk() -> str:
                return (await client.complete(MESSAGES)).text

            assert await sdk() == text
            ours = await timed(answers, sdk)
    for label, (wall, cpu) in (("baseline", base), ("client", ours)):
        print(
            f"{label:9} {wall * 1000:7.2f} ms wall {cpu * 1000:7.2f} ms cpu per answer, "
            f"{cpu / chunks * 1e6:6.1f} us cpu per event"
        )
    print(f"ratio     {ours[0] / base[0]:.1f}x wall, {ours[1] / base[1]:.1f}x cpu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(run(args.answers, args.chunks))


if __name__ == "__main__":
    main()
