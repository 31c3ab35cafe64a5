"""Cost of the speaker labels of one context, against the work its messages already get.

``SpeakerLabels`` runs once per context over everyone named in a header: each name is cleaned
(invisible characters out), normalized twice (NFKC, NFD), mapped through the look-alike table and
grouped; then one label per message. The baseline, in the same run, is ``continuation_lines``
over the same context's messages (the layout every message of every context gets). Two
contexts of 30 messages: 12 ordinary speakers, and 12 speakers all passing for "Ben" (invisible
characters, Cyrillic and Greek letters, a forged suffix), where every label gets a suffix.

    python -m bench.speaker_labels
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conversation.prompt import SpeakerLabels, continuation_lines

ORDINARY = [
    "Ana", "Ben", "Chloé", "dev_ops", "Eli (he/him)", "Fatima", "グエン", "Hugo 🦊", "Ирина",
    "jo", "Kai | away", "Léa",
]  # fmt: skip
BENS = [
    "Ben", "BEN", "B\u200den", "B\u00aden", "Ben\u3164", "Ben\ufe0f", "B\u0435n",
    "\u0392\u0395\u039d", "\uff22en", "Ben (user \u20260102)", "ben ", "B\U000e0041en",
]  # fmt: skip
TEXTS = [
    "did anyone try the new release on the staging box? it keeps restarting for me",
    "ok so here is what I tried:\n1. restarted the service\n2. cleared the cache",
    "yes",
]


def per_call(function: Callable[[], object], calls: int) -> float:
    """Best of five runs, seconds per call."""
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        for _ in range(calls):
            function()
        best = min(best, (time.perf_counter() - began) / calls)
    return best


def main() -> None:
    print(f"{'context':<26} {'labels us':>10} {'layout us':>10} {'ratio':>6}")
    for label, names in (("12 ordinary speakers", ORDINARY), ("12 speakers passing as Ben", BENS)):
        people = [(1300000000000000100 + n, name) for n, name in enumerate(names)]
        messages = [(people[n % len(people)], TEXTS[n % len(TEXTS)]) for n in range(30)]

        def labels(people=people, messages=messages) -> None:
            built = SpeakerLabels(people)
            for (user_id, name), _ in messages:
                built.label(user_id, name)

        def layout(messages=messages) -> None:
            for _, text in messages:
                continuation_lines(text)

        cost, baseline = per_call(labels, 2000), per_call(layout, 2000)
        print(f"{label:<26} {cost * 1e6:>10.1f} {baseline * 1e6:>10.1f} {cost / baseline:>6.2f}")


if __name__ == "__main__":
    main()
