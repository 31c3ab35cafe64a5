"""How much of each prompt a prefix-caching model server could reuse, old layout against new.

Replays the irc-dev triggers in order, channel by channel (one log is one channel), builds the
prompt each would get, and measures the longest byte-identical prefix it shares, rendered the
way chat templates lay messages out, with:

* the previous prompt of the channel (one llama.cpp slot, Ollama);
* any of the channel's last 64 prompts (vLLM's prefix cache, several llama.cpp slots, OpenAI
  and Anthropic, which keep many prefixes).

That prefix is what the server does not read again (OpenAI and Anthropic bill it as cached).
Reported as the share of all prompt tokens, for two layouts of the same selection, built once per
trigger: time order (before) and the conversation first, the channel's other recent messages after a
label (``conversation.prompt.layout``); then append-only (``conversation.memory``): every trigger
counted as answered, in order, a follow-up's request starting with the one before it (no answer:
the log has none); and append-only with an active speaker standing in for the bot (the log's three
most active annotated speakers in turn, as ``lab.follow`` picks them), the triggers being the
messages they answered and their answers the assistant's turns. Context F1 and parent recall of
the selection are printed beside them: neither the layout nor the memory moves a selected message
in or out (the memory keeps earlier ones in).

    python -m bench.prefix [DATA_DIR] [--window 64] [--keep-share 0.6] [--cut-share 0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.config.model_settings import DEFAULT_SYSTEM_PROMPT
from conversation.common import ContextSettings
from conversation.graph import MessageNode, to_openai
from conversation.memory import (
    CUT_SHARE,
    KEEP_SHARE,
    BoundedMemory,
    Continuity,
    SummaryPolicy,
    remembered_prompt,
    sent_prompt,
)
from conversation.prompt import (
    Budget,
    MaterializeOptions,
    Materializer,
    Persona,
    PreparedPrompt,
    TokenCounter,
    conversation_threshold,
    persona_for,
    prompt_for,
    text_tokens,
)
from conversation.replay import GoldTrigger, LogSource, Score, load_gold
from conversation.selection import ContextBuilder
from conversation.sources import ChannelCache, ChannelReader
from lab.context_quality import DEFAULT_DATA

LAYOUTS = {"time order": True, "conversation first": False}
APPEND = "append-only: a follow-up continues the request before"
STAND_IN = "append-only, an active speaker standing in for the bot"
SPEAKERS = 3  # the most active annotated speakers of each log stand in for the bot, in turn


@dataclass
class Tally:
    prompts: int = 0
    tokens: int = 0
    previous: int = 0  # tokens shared with the previous prompt
    recent: int = 0  # tokens shared with the best of the last ``window`` prompts
    cuts: int = 0  # prompts cut because the conversation outgrew its room
    summaries: int = 0  # summaries asked for at those cuts (written or failed)
    continued: int = 0  # prompts that start with the previous request of their conversation

    def share(self, reused: int) -> float:
        return reused / self.tokens if self.tokens else 0.0

    def add(self, current: list[str], earlier: deque[list[str]]) -> None:
        """One more prompt, measured against the ones the server still holds."""
        self.prompts += 1
        self.tokens += text_tokens("".join(current))
        if earlier:
            self.previous += text_tokens(shared_prefix(earlier[-1], current))
            self.recent += max(text_tokens(shared_prefix(old, current)) for old in earlier)
        earlier.append(current)

    def count(self, prepared: PreparedPrompt) -> None:
        self.continued += prepared.reused is not None
        cuts = prepared.fitted.cuts if prepared.fitted else []
        self.cuts += any(cut.what.startswith("conversation cut") for cut in cuts)
        self.summaries += prepared.summary_note is not None


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


def channel_logs(data: Path) -> Iterator[tuple[LogSource, Persona, dict[int, GoldTrigger]]]:
    """Each log of ``data`` (one channel), its default persona and its gold triggers."""
    for log_path in sorted(data.glob("*.json")):
        if log_path.name.endswith(".gold.json"):
            continue
        source = LogSource.from_file(log_path)
        persona = persona_for(DEFAULT_SYSTEM_PROMPT, "threadwise", source.channel)
        yield source, persona, load_gold(log_path.with_suffix(".gold.json"))


async def replay(
    data: Path, window: int, continuity: Continuity | None = None
) -> tuple[dict[str, Tally], Score]:
    tallies = {name: Tally() for name in [*LAYOUTS, APPEND, STAND_IN]}
    score = Score()
    budget = Budget(window=8192, reserve=1024)
    settings = ContextSettings()
    builder = ContextBuilder(settings)
    threshold = conversation_threshold(builder)
    continuity = continuity or Continuity(max_total=settings.max_total)
    materializer = Materializer(MaterializeOptions())
    for source, persona, gold in channel_logs(data):
        seen: dict[str, deque[list[str]]] = {name: deque(maxlen=window) for name in tallies}
        memory = BoundedMemory(per_channel=window)
        for trigger_id in sorted(gold):
            trigger = source.message(trigger_id)
            reader = ChannelReader(source, ChannelCache(source.channel_id))
            selection = await builder.build(trigger, reader)
            score.add(trigger_id, set(selection.ids), gold[trigger_id])
            for name, time_order in LAYOUTS.items():
                prepared = await prompt_for(
                    selection,
                    materializer,
                    persona,
                    threshold=threshold,
                    now=trigger.created_at,
                    budget=budget,
                    counter=TokenCounter(),
                    time_order=time_order,
                )
                tallies[name].add(
                    rendered(to_openai(prepared.graph.snapshot().nodes())), seen[name]
                )
            prepared, previous = await remembered_prompt(
                prepared, memory, source.channel_id, continuity=continuity, budget=budget
            )
            memory.remember_now(sent_prompt(prepared, source.channel_id, previous=previous))
            tallies[APPEND].count(prepared)
            tallies[APPEND].add(
                rendered(to_openai(prepared.graph.snapshot().nodes())), seen[APPEND]
            )
        await stand_in(
            source, gold, persona, builder, continuity, budget, window, tallies[STAND_IN]
        )
    return tallies, score


async def stand_in(
    source: LogSource,
    gold: dict[int, GoldTrigger],
    persona: Persona,
    builder: ContextBuilder,
    continuity: Continuity,
    budget: Budget,
    window: int,
    tally: Tally,
    summaries: SummaryPolicy | None = None,
) -> None:
    """The log's most active annotated speakers stand in for the bot in turn (as ``lab.follow``
    picks them): each message of theirs whose gold parent is someone else's answers that
    parent, so the parent is a trigger and the speaker's message the bot's answer, sent as the
    assistant's turn and continued by the next trigger of the conversation. ``summaries``:
    cuts are summarized (``bench.summaries``)."""
    speakers = Counter(source.message(i).author.id for i in gold).most_common(SPEAKERS)
    threshold = conversation_threshold(builder)
    for speaker, _count in speakers:
        materializer = Materializer(MaterializeOptions(bot_user_id=speaker))
        answers: dict[int, int] = {}  # trigger -> the speaker's answer to it
        for message_id in sorted(gold):
            message = source.message(message_id)
            if message.author.id != speaker:
                continue
            for parent in sorted(gold[message_id].parents):
                if source.message(parent).author.id != speaker:
                    answers.setdefault(parent, message_id)
        memory = BoundedMemory(per_channel=window)
        earlier: deque[list[str]] = deque(maxlen=window)
        for trigger_id in sorted(answers):
            trigger = source.message(trigger_id)
            reader = ChannelReader(source, ChannelCache(source.channel_id))
            selection = await builder.build(trigger, reader)
            fresh = await prompt_for(
                selection, materializer, persona, threshold=threshold, now=trigger.created_at,
                budget=budget, counter=TokenCounter(),
            )  # fmt: skip
            prepared, previous = await remembered_prompt(
                fresh, memory, source.channel_id, continuity=continuity, budget=budget,
                summaries=summaries,
            )  # fmt: skip
            reply = source.message(answers[trigger_id])
            answer = MessageNode(
                role="assistant", content=reply.content, message_id=str(reply.id),
                created_at=reply.created_at,
            )  # fmt: skip
            memory.remember_now(
                sent_prompt(
                    prepared, source.channel_id, answer=answer, answer_ids=[reply.id],
                    previous=previous,
                )
            )  # fmt: skip
            tally.count(prepared)
            tally.add(rendered(to_openai(prepared.graph.snapshot().nodes())), earlier)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--window", type=int, default=64, help="prompts a server keeps (64)")
    parser.add_argument("--keep-share", type=float, default=KEEP_SHARE, help="(0.6)")
    parser.add_argument("--cut-share", type=float, default=CUT_SHARE, help="(0.5)")
    args = parser.parse_args()
    continuity = Continuity(
        max_total=ContextSettings().max_total, keep_share=args.keep_share, cut_share=args.cut_share
    )
    tallies, score = asyncio.run(replay(args.data, args.window, continuity))
    first = next(iter(tallies.values()))
    print(f"{first.prompts} triggers of {args.data.name}, replayed in order per channel\n")
    print(
        f"| prompt layout | prompt tokens | reused from previous | reused from last "
        f"{args.window} | tokens not re-read/answer | prompts | continued | cut | context F1 "
        "| parent recall |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, tally in tallies.items():
        print(
            f"| {name} | {tally.tokens:,} | {tally.share(tally.previous):.1%} | "
            f"{tally.share(tally.recent):.1%} | {tally.recent / max(tally.prompts, 1):.0f} | "
            f"{tally.prompts} | {tally.continued} | {tally.cuts} | "
            f"{score.f1:.3f} | {score.parent_recall:.3f} |"
        )


if __name__ == "__main__":
    main()
