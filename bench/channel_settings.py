"""What per-channel settings cost an answer: finding a channel's parts among 0 to 500 tables.

Each answer asks ``ChannelRuntimes.runtime_for(channel)`` for its effective settings, builder,
model client and budget. They are built once per ``[[channels]]`` table, so a lookup is three
dictionary reads; the baseline in the same process is ``persona_for``, the one call every answer
already made to fill in its system prompt. Also shown: what building a table's effective
settings costs (paid once per table at load and reload, never per answer).

    python -m bench.channel_settings
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.answering.channels import ChannelRuntimes, ModelClients
from bot.answering.prompt_budget import PromptBudgeter
from bot.config.channels import effective_configs
from bot.config.schema import Config
from bot.model.client import ModelClient
from conversation.prompt import persona_for

RUNS = 20_000
TABLE_COUNTS = (0, 10, 500)


def config_with(tables: int) -> Config:
    return Config.model_validate(
        {
            "models": {"big": {"base_url": "http://127.0.0.1:9/v1", "name": "big-model"}},
            "channels": [
                {
                    "match": {"channel_ids": [1000 + i], "category_ids": [5000 + i]},
                    "model": {"use": "big", "system_prompt": f"You are persona {i}."},
                    "context": {"max_total": 10 + i % 20},
                }
                for i in range(tables)
            ],
        }
    )


def channel(channel_id: int, category_id: int | None, *, parent: Any = None) -> Any:
    guild = SimpleNamespace(id=1, name="server", get_channel=lambda _id: parent)
    if parent is not None:
        return SimpleNamespace(id=channel_id, parent_id=parent.id, guild=guild, name="thread")
    return SimpleNamespace(id=channel_id, category_id=category_id, guild=guild, name="channel")


def per_call(function: Any, runs: int = RUNS) -> float:
    samples = []
    for _ in range(5):
        began = time.perf_counter()
        for _ in range(runs):
            function()
        samples.append((time.perf_counter() - began) / runs)
    return statistics.median(samples)


def main() -> None:
    base = ModelClient(Config().model)
    text_channel = channel(1000, None)
    prompt = Config().model.system_prompt
    baseline = per_call(lambda: persona_for(prompt, "bot", text_channel))
    print(f"baseline persona_for: {baseline * 1e6:.2f} us per answer")
    for tables in TABLE_COUNTS:
        config = config_with(tables)
        runtimes = ChannelRuntimes(
            config,
            clients=ModelClients(base, config.models),
            budgeter=PromptBudgeter(config.model),
            links=None,
        )
        last = max(tables - 1, 0)
        places = {
            "channel table": channel(1000 + last, None),
            "category table": channel(9, 5000 + last),
            "thread of a channel": channel(7, None, parent=channel(1000 + last, None)),
            "no table": channel(3, None),
        }
        for name, where in places.items():
            runtimes.runtime_for(where)  # built once, as the first answer there does
            cost = per_call(lambda where=where, r=runtimes: r.runtime_for(where))
            print(
                f"{tables:>3} tables, {name:<19}: {cost * 1e6:.2f} us "
                f"({cost / baseline:.2f}x persona_for)"
            )
        if tables:
            build = per_call(lambda config=config: effective_configs(config), runs=5)
            print(
                f"{tables:>3} tables: effective settings built once at load: {build * 1e3:.1f} ms"
            )


if __name__ == "__main__":
    main()
