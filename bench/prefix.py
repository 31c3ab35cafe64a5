"""How much of each prompt a prefix-caching model server could reuse from the previous one.

Replays the irc-dev triggers in order, channel by channel (one log is one channel), builds the
prompt each would get, and compares it with the previous prompt of the same channel: the
longest byte-identical prefix of the two, rendered the way chat templates lay messages out,
is what llama.cpp, vLLM or Ollama would not need to read again (OpenAI and Anthropic bill it as
cached). Reported as the share of all prompt tokens, and as tokens saved per answer.

Two prompt layouts, in the same run: before (the persona starts with "The current time is
{now}" and the trigger carries no time; ``now`` is the trigger's minute, as for an answer given
at once) and after (no per-request value at the start; the trigger ends with its own time).

    python -m bench.prefix [DATA_DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.context_quality import DEFAULT_DATA, gold_triggers
from bot.config.model_settings import DEFAULT_SYSTEM_PROMPT
from conversation.budget import Budget
from conversation.builder import ContextBuilder
from conversation.cache import ChannelCache
from conversation.formats import to_openai
from conversation.log_source import LogSource
from conversation.materialize import MaterializeOptions, Materializer
from conversation.pipeline import persona_for, prepare_prompt
from conversation.reader import ChannelReader
from conversation.settings import ContextSettings
from conversation.tokens import TokenCounter, text_tokens

BEFORE_PROMPT = (
    "You are {bot_name}, a helpful assistant chatting on the Discord server {server}, "
    "in #{channel}. The current time is {now}. Several people may be talking at once: each "
    "message is labelled with its author, answer the one who addressed you. Be concise and use "
    "Discord markdown."
)


@dataclass
class Tally:
    prompts: int = 0
    tokens: int = 0
    reused: int = 0

    @property
    def share(self) -> float:
        return self.reused / self.tokens if self.tokens else 0.0


def rendered(messages: list[dict]) -> list[str]:
    """Each message as a chat template lays it out (role, name, text, end marker)."""
    return [f"<|{m['role']}|>{m.get('name', '')}\n{m['content']}<|end|>\n" for m in messages]


def shared_prefix(previous: list[str], current: list[str]) -> str:
    """The longest common prefix of the two rendered prompts."""
    parts: list[str] = []
    for old, new in zip(previous, current, strict=False):
        if old == new:
            parts.append(new)
            continue
        low, high = 0, min(len(old), len(new))
        while low < high:  # longest equal start of the first differing message
            middle = (low + high + 1) // 2
            if old[:middle] == new[:middle]:
                low = middle
            else:
                high = middle - 1
        parts.append(new[:low])
        break
    return "".join(parts)


async def replay(data: Path, template: str, budget: Budget | None) -> Tally:
    tally = Tally()
    settings = ContextSettings()
    builder = ContextBuilder(settings)
    materializer = Materializer(MaterializeOptions())
    for log_path in sorted(data.glob("*.json")):
        if log_path.name.endswith(".gold.json"):
            continue
        source = LogSource.from_file(log_path)
        persona = persona_for(template, "threadwise", source.channel)
        previous: list[str] = []
        for trigger_id in sorted(gold_triggers(log_path.with_suffix(".gold.json"))):
            trigger = source.message(trigger_id)
            reader = ChannelReader(source, ChannelCache(source.channel_id))
            prepared = await prepare_prompt(
                trigger,
                reader,
                builder,
                materializer,
                persona,
                now=trigger.created_at,
                budget=budget,
                counter=TokenCounter(),
            )
            current = rendered(to_openai(prepared.graph.snapshot().nodes()))
            tally.prompts += 1
            tally.tokens += text_tokens("".join(current))
            tally.reused += text_tokens(shared_prefix(previous, current))
            previous = current
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    budget = Budget(window=8192, reserve=1024)
    before = asyncio.run(replay(args.data, BEFORE_PROMPT, None))
    after = asyncio.run(replay(args.data, DEFAULT_SYSTEM_PROMPT, budget))
    print(f"{before.prompts} triggers of {args.data.name}, replayed in order per channel\n")
    print("| prompt layout | prompt tokens | reusable prefix | share | tokens not re-read/answer |")
    print("|---|---|---|---|---|")
    for name, tally in (("before: {now} in the system prompt", before), ("after", after)):
        print(
            f"| {name} | {tally.tokens:,} | {tally.reused:,} | {tally.share:.1%} | "
            f"{tally.reused / max(tally.prompts, 1):.0f} |"
        )


if __name__ == "__main__":
    main()
