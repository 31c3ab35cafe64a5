"""All of a message graph at one moment, as persistent vectors; transitions return a new state.

Every change builds a new ``GraphState`` that shares structure with the old one (pyrsistent's
persistent vectors: O(log32 n) per append/edit), so a snapshot is O(1) and every earlier state
stays readable as it was. Inserting or deleting in the middle rebuilds the id vector (O(n)
pointers: pyrsistent has no persistent insert); appends, reads, edits and snapshots never do. A
change at or before the last intact assistant turn forks a new branch (``BranchRecord``), so the
prefix that turn was generated from is kept for good.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from pyrsistent import PVector

from conversation.common.compat import pvector
from conversation.graph.node import MessageNode

_EMPTY: PVector = pvector()


# --- persistent state -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BranchRecord:
    """Where a branch came from; ``head`` is filled in when the branch stops being current."""

    parent: int | None
    fork_index: int | None
    cause: str | None
    first_sample: int
    head: PVector | None = None


_ROOT_BRANCHES: PVector = pvector([BranchRecord(None, None, None, 0)])


@dataclass(frozen=True, slots=True)
class GraphState:
    """All of a graph at one moment, as persistent vectors; transitions return a new state.

    ``nodes[id]`` is every node ever added and ``replaces[id]`` the ids it replaced (parallel
    edges). ``head`` is the current branch's node ids in order. ``turns[:turn_count]`` are the
    positions of the current branch's assistant turns whose context is intact (increasing; slots
    past ``turn_count`` are leftovers that a fork cut off in O(1)). ``samples`` holds the position
    of every assistant turn ever added, grouped by branch in branch order, because only the newest
    branch is ever current; ``branches[b].first_sample`` is where branch ``b``'s group starts.
    """

    nodes: PVector = _EMPTY
    replaces: PVector = _EMPTY
    head: PVector = _EMPTY
    branch: int = 0
    branches: PVector = _ROOT_BRANCHES
    turns: PVector = _EMPTY
    turn_count: int = 0
    samples: PVector = _EMPTY

    @property
    def last_turn(self) -> int:
        """Position of the last intact assistant turn on this branch, -1 if none."""
        return self.turns[self.turn_count - 1] if self.turn_count else -1

    def splice(self, start: int, stop: int, new: tuple[MessageNode, ...]) -> GraphState:
        """Replace ``head[start:stop]`` by ``new`` (an append, edit, insert, delete or squash).

        New nodes replace old ones pairwise when the counts match (an edit), all of them when one
        node replaces several (a squash); otherwise only the flow changes. Replacing nodes by equal
        ones changes nothing and records nothing.
        """
        size = len(self.head)
        if not 0 <= start <= stop <= size:
            raise IndexError(f"splice [{start}:{stop}] out of range for {size} messages")
        removed = stop - start
        if removed == len(new) and all(
            self.nodes[self.head[start + j]] == node for j, node in enumerate(new)
        ):
            return self
        state = self._fork(start, _cause(removed, len(new))) if start <= self.last_turn else self
        first_id = len(state.nodes)
        ids = range(first_id, first_id + len(new))
        head = state.head
        if removed == 0 and start == size:
            head = head.append(first_id) if len(new) == 1 else head.extend(ids)
        elif removed == len(new):
            for j, node_id in enumerate(ids):
                head = head.set(start + j, node_id)
        else:
            spliced = head.tolist()
            spliced[start:stop] = ids
            head = pvector(spliced)
        old_ids = tuple(self.head[start + j] for j in range(removed))
        if removed == len(new):
            edges: Iterable[tuple[int, ...]] = ((old,) for old in old_ids)
        elif len(new) == 1:
            edges = (old_ids,)
        else:
            edges = itertools.repeat((), len(new))
        turns, turn_count, samples = state.turns, state.turn_count, state.samples
        for j, node in enumerate(new):
            if node.role == "assistant":
                # Positions only grow within a branch: every change here is after last_turn.
                position = start + j
                turns = turns.set(turn_count, position)
                turn_count += 1
                samples = samples.append(position)
        if len(new) == 1:  # the common case; append is cheaper than a one-item extend
            nodes, replaces = state.nodes.append(new[0]), state.replaces.append(next(iter(edges)))
        else:
            nodes, replaces = state.nodes.extend(new), state.replaces.extend(edges)
        # Plain constructor calls: dataclasses.replace costs several microseconds per change.
        return GraphState(
            nodes,
            replaces,
            head,
            state.branch,
            state.branches,
            turns,
            turn_count,
            samples,
        )

    def _fork(self, at: int, cause: str) -> GraphState:
        record = self.branches[self.branch]
        branches = self.branches.set(self.branch, replace(record, head=self.head))
        branches = branches.append(BranchRecord(self.branch, at, cause, len(self.samples)))
        kept = bisect.bisect_left(self.turns, at, 0, self.turn_count)
        return GraphState(
            self.nodes,
            self.replaces,
            self.head,
            len(self.branches),
            branches,
            self.turns,
            kept,
            self.samples,
        )

    def branch_head(self, branch: int) -> PVector:
        return self.head if branch == self.branch else self.branches[branch].head

    def sample_range(self, branch: int) -> tuple[int, int]:
        """Indexes into ``samples`` of the turns added while ``branch`` was current."""
        stop = (
            self.branches[branch + 1].first_sample
            if branch + 1 < len(self.branches)
            else len(self.samples)
        )
        return self.branches[branch].first_sample, stop

    def branch_samples(self, branch: int | None) -> Iterator[tuple[int, int]]:
        """``(branch it was added on, position)`` of the turns valid on ``branch`` (all if None).

        A branch shares its parent's samples that lie before its fork position (recursively up
        to the root) and adds those of the turns that entered while it was current.
        """
        if branch is None:
            for each in range(len(self.branches)):
                lo, hi = self.sample_range(each)
                for index in range(lo, hi):
                    yield each, self.samples[index]
            return
        segments = []
        limit: int | None = None
        current: int | None = branch
        while current is not None:
            lo, hi = self.sample_range(current)
            if limit is not None:
                hi = bisect.bisect_left(self.samples, limit, lo, hi)
            segments.append((current, lo, hi))
            record = self.branches[current]
            if record.fork_index is not None:
                limit = record.fork_index if limit is None else min(limit, record.fork_index)
            current = record.parent
        for owner, lo, hi in reversed(segments):
            for index in range(lo, hi):
                yield owner, self.samples[index]


def _cause(removed: int, added: int) -> str:
    if removed == 0:
        return "insert"
    if added == 0:
        return "delete"
    if added == removed:
        return "edit"
    return "squash" if added == 1 else "splice"
