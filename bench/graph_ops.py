"""Cost of MessageGraph operations against the original design's deep-copy sketch, in the same run.

For each size (1e3 .. 1e6 messages; ``--quick``: 1e3, 1e4) it prints the time per operation and
the memory each edit leaves behind (tracemalloc, everything still reachable: the new node, the
new path in the vectors, the branch a prefix break records), for:

* append        ``g.append({...})`` (dict validated into a node)
* get           ``g[i]["content"]``
* edit          ``g[mid]["content"] = text`` on a user message (breaks a prefix once)
* edit+branch   ``g[mid] = {...assistant...}`` regenerating a turn: a new branch every time
* snapshot      ``g.snapshot()``: what a model saw, kept
* insert/delete in the middle: O(n) by design (pyrsistent has no persistent insert), shown so
  nobody mistakes them for O(log n)
* gc.collect    one full garbage collection with everything above still alive (thousands of
  kept versions): the history must not make the collector walk it again for every version

The original design's sketch (``OriginalGraph`` below, as written there) keeps history by
deep-copying the whole graph, previous copies included, into ``prev_graph`` on every edit before
an assistant turn, and has no snapshot: a deep copy of the messages is the only way to keep what a
model saw. It runs up to the size where it stays bearable (1e5; 1e4 with ``--quick``), with few
repetitions.

Run: ``python bench/graph_ops.py [--quick]``
"""

from __future__ import annotations

import argparse
import copy
import gc
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conversation.graph import MessageGraph, MessageNode


class OriginalGraph:
    """The original design's sketch, verbatim apart from names and formatting (the baseline)."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.prev_graph: OriginalGraph | None = None

    def append(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.messages[index]

    def __setitem__(self, key: int, value: dict[str, Any]) -> None:
        needs_new_graph = False
        for i in range(key, len(self.messages)):
            if (
                i == key
                and value["role"] == "assistant"
                and value["content"] == self.messages[i]["content"]
            ):
                return
            needs_new_graph = needs_new_graph or self.messages[i]["role"] == "assistant"
        if needs_new_graph:
            self.prev_graph = copy.deepcopy(self)
        self.messages[key] = value

    def __len__(self) -> int:
        return len(self.messages)


def conversation(size: int) -> list[dict[str, Any]]:
    """A system prompt, then users and the assistant taking turns (distinct dicts)."""
    messages = [{"role": "system", "content": "You are helpful."}]
    for i in range(1, size):
        if i % 2:
            messages.append({"role": "user", "content": f"question {i}", "name": f"user{i % 7}"})
        else:
            messages.append({"role": "assistant", "content": f"answer {i}"})
    return messages


def build_ours(size: int) -> MessageGraph:
    # Nodes are reused from a small pool: the graph stores references, so this measures the
    # graph's structure and not a million copies of the same pydantic object.
    pool = [MessageNode.from_dict(m) for m in conversation(64)]
    nodes = [pool[0]] + [pool[1 + (i - 1) % 62] for i in range(1, size)]
    return MessageGraph(nodes)


def build_original(size: int) -> OriginalGraph:
    graph = OriginalGraph()
    for message in conversation(size):
        graph.append(message)
    return graph


def per_op(action: Callable[[int], Any], reps: int) -> float:
    """Mean seconds per call of ``action(k)``, k in range(reps), GC paused (as ``timeit`` does)."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for k in range(reps):
            action(k)
        return (time.perf_counter() - start) / reps
    finally:
        gc.enable()


def retained_per_op(action: Callable[[int], Any], reps: int) -> float:
    """Mean bytes still allocated after ``reps`` calls (what each call leaves reachable)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [action(k) for k in range(reps)]
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    return (after - before) / reps


def full_collection() -> float:
    """Seconds for one full garbage collection with the structures built so far alive."""
    start = time.perf_counter()
    gc.collect()
    return time.perf_counter() - start


def middle_user(size: int) -> int:
    mid = size // 2
    return mid if mid % 2 else mid + 1


Result = dict[str, tuple[float, float | None]]  # op -> (seconds per op, bytes per op)


def measure_ours(size: int, reps: int) -> Result:
    graph = build_ours(size)
    user_pos = middle_user(size)
    bot_pos = user_pos + 1
    out: Result = {}

    def append(k: int) -> None:
        graph.append({"role": "user", "content": f"more {k}"})

    out["append"] = (per_op(append, reps), retained_per_op(append, reps))
    positions = [(k * 7919) % size for k in range(reps)]
    out["get"] = (per_op(lambda k: graph[positions[k]]["content"], reps), None)

    def edit(k: int) -> None:  # the original design's interface: a nested assignment
        graph[user_pos]["content"] = f"edited {k}"

    out["edit"] = (per_op(edit, reps), retained_per_op(edit, reps))
    branches_before = len(graph.branches())

    def regenerate(k: int) -> None:  # replaces an intact assistant turn: a branch every time
        graph[bot_pos] = {"role": "assistant", "content": f"retry {k}"}

    out["edit+branch"] = (per_op(regenerate, reps), retained_per_op(regenerate, reps))
    # The first retry follows the user edit above (that edit already broke the old answer's
    # prefix); every later retry replaces an intact turn and must branch.
    assert len(graph.branches()) == branches_before + 2 * reps - 1, "each retry must branch"
    out["snapshot"] = (per_op(lambda k: graph.snapshot(), reps), None)
    out["snapshot"] = (out["snapshot"][0], retained_per_op(lambda k: graph.snapshot(), reps))
    few = 10 if size >= 100_000 else 100
    out["insert(mid)"] = (
        per_op(lambda k: graph.insert(user_pos, {"role": "user", "content": "ins"}), few),
        None,
    )
    out["delete(mid)"] = (per_op(lambda k: graph.__delitem__(user_pos), few), None)
    out["gc.collect"] = (full_collection(), None)
    return out


def original_edit_cost(size: int, position: int, role: str, reps: int) -> tuple[float, float]:
    timed, traced = build_original(size), build_original(size)
    return (
        per_op(lambda k: timed.__setitem__(position, {"role": role, "content": f"{k}"}), reps),
        retained_per_op(
            lambda k: traced.__setitem__(position, {"role": role, "content": f"{k}"}), reps
        ),
    )


def measure_original(size: int, reps: int) -> Result:
    """The sketch on a fresh graph per operation, so its prev_graph chain starts empty each time."""
    user_pos = middle_user(size)
    bot_pos = user_pos + 1
    out: Result = {}
    graph = build_original(size)

    def append(k: int) -> None:
        graph.append({"role": "user", "content": f"more {k}"})

    out["append"] = (per_op(append, 2000), retained_per_op(append, 2000))
    positions = [(k * 7919) % size for k in range(2000)]
    out["get"] = (per_op(lambda k: graph[positions[k]]["content"], 2000), None)
    # The sketch loses nested assignments, so it needs a whole message to record anything.
    out["edit"] = original_edit_cost(size, user_pos, "user", reps)
    out["edit+branch"] = original_edit_cost(size, bot_pos, "assistant", reps)
    out["snapshot"] = (
        per_op(lambda k: copy.deepcopy(graph.messages), reps),
        retained_per_op(lambda k: copy.deepcopy(graph.messages), reps),
    )
    return out


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.2f} us"


def fmt_bytes(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.1f} MB"
    if value >= 1e3:
        return f"{value / 1e3:.2f} KB"
    return f"{value:.0f} B"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes 1e3 and 1e4 only")
    args = parser.parse_args()
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000, 1_000_000]
    original_limit = 10_000 if args.quick else 100_000
    reps = 500 if args.quick else 2_000
    started = time.perf_counter()
    header = ("messages", "op", "graph/op", "graph mem/op", "orig/op", "orig mem/op", "orig/graph")
    print("{:>9} {:<12} {:>11} {:>12} {:>11} {:>12} {:>10}".format(*header))
    for size in sizes:
        ours = measure_ours(size, reps)
        gc.collect()
        reps_original = 3 if size <= 10_000 else 2
        original = measure_original(size, reps_original) if size <= original_limit else {}
        gc.collect()
        for op, (t, m) in ours.items():
            st, sm = original.get(op, (None, None))
            ratio = "-" if not st else f"{st / t:,.0f}x" if st >= 10 * t else f"{st / t:.2f}x"
            print(
                f"{size:>9,} {op:<12} {fmt_time(t):>11} {fmt_bytes(m):>12} "
                f"{fmt_time(st):>11} {fmt_bytes(sm):>12} {ratio:>10}"
            )
        sys.stdout.flush()
    print(f"total {time.perf_counter() - started:.1f} s (python {sys.version.split()[0]})")
    print(
        "original: edits deep-copy the graph and every earlier copy (prev_graph chain), so its "
        "cost grows with each edit; it has no snapshot, a deep copy of the messages stands in."
    )


if __name__ == "__main__":
    main()
