"""The fitted models the score is made of, evaluated in pure Python.

A ``LogisticStage`` (the first look) and ``TreeStage``s (boosted trees: the second look, the
optional third, the answer ranking) are read from the weights file as pydantic models; each tree
stage is compiled once into a Python expression, so the bot scores hundreds of candidates per
trigger without numpy, scikit-learn or LightGBM (they are training-only: ``lab/``).
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict


class LogisticStage(BaseModel):
    """One logistic model over standardised features."""

    model_config = ConfigDict(frozen=True)

    features: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float

    def contributions(self, row: Sequence[float]) -> list[float]:
        return [
            w * (x - m) / s
            for w, x, m, s in zip(self.weights, row, self.means, self.scales, strict=True)
        ]

    def score(self, row: Sequence[float]) -> tuple[float, list[float]]:
        """Probability that the candidate belongs, and each feature's share of the log-odds."""
        parts = self.contributions(row)
        z = max(-30.0, min(30.0, self.bias + sum(parts)))
        return 1.0 / (1.0 + math.exp(-z)), parts

    @functools.cached_property
    def _folded(self) -> tuple[float, tuple[float, ...]]:
        """The standardisation folded into the weights: log-odds = bias + sum(x * weight)."""
        weights = tuple(w / s for w, s in zip(self.weights, self.scales, strict=True))
        bias = self.bias - sum(w * m for w, m in zip(weights, self.means, strict=True))
        return bias, weights

    def probability(self, row: Sequence[float]) -> float:
        """The probability alone, in one pass (the builder scores every candidate this way)."""
        return self.probabilities((row,))[0]

    def probabilities(self, rows: Iterable[Sequence[float]]) -> list[float]:
        """``probability`` of each row, in one loop (the first look reads two hundred)."""
        bias, weights = self._folded
        mul, exp = operator.mul, math.exp
        probabilities: list[float] = []
        for row in rows:
            z = bias + sum(map(mul, row, weights))
            # max(-30, min(30, z)) without two calls per row (a NaN clips to 30 alike).
            z = z if -30.0 <= z <= 30.0 else (-30.0 if z < -30.0 else 30.0)
            probabilities.append(1.0 / (1.0 + exp(-z)))
        return probabilities


class Tree(BaseModel):
    """One regression tree as flat node arrays; a node with feature -1 is a leaf.

    ``values`` holds every node's value (a leaf's is what it adds to the log-odds; an inner
    node's is what its leaves add on average), so a walk down the tree can say which feature
    moved the score by how much.
    """

    model_config = ConfigDict(frozen=True)

    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    left: tuple[int, ...]
    right: tuple[int, ...]
    values: tuple[float, ...]

    def expression(self, node: int = 0) -> str:
        """The tree as one Python expression giving the leaf's value, feature ``i`` read from
        the local ``x{i}`` (compiled once, evaluated fast)."""
        if self.feature[node] < 0:
            return repr(float(self.values[node]))
        left = self.expression(self.left[node])
        right = self.expression(self.right[node])
        return (
            f"({left} if x{int(self.feature[node])} < {float(self.threshold[node])!r} else {right})"
        )

    def walk_lines(self, indent: str, node: int = 0) -> list[str]:
        """The tree as statements that add, at each split taken, the change of value it made to
        the local ``p{feature}``: a row's contributions in one compiled walk, with no leaf
        lookup."""
        feature = self.feature[node]
        if feature < 0:
            return [f"{indent}pass"]
        lines = [f"{indent}if x{int(feature)} < {float(self.threshold[node])!r}:"]
        for child, head in ((self.left[node], None), (self.right[node], f"{indent}else:")):
            if head is not None:
                lines.append(head)
            change = float(self.values[child] - self.values[node])
            lines.append(f"{indent}    p{int(feature)} += {change!r}")
            lines.extend(self.walk_lines(indent + "    ", child))
        return lines


def _unpacked(name: str, count: int) -> str:
    """``x0, x1, ..., = x``: a row's features as locals, which the compiled trees read faster
    than subscripts (about a third of their time)."""
    return ", ".join(f"{name}{i}" for i in range(count)) + ","


class TreeStage(BaseModel):
    """Gradient-boosted trees over the features, evaluated in pure Python.

    Trees see what a linear model cannot: a word overlap that matters only for a recent
    message, a participant's message that counts only when it does not address outsiders.
    """

    model_config = ConfigDict(frozen=True)

    features: tuple[str, ...]
    means: tuple[float, ...]  # training means, to word a measure as high or low
    base: float
    trees: tuple[Tree, ...]

    @functools.cached_property
    def _compiled(self):
        body = " + ".join([repr(float(self.base))] + [tree.expression() for tree in self.trees])
        count = len(self.features)
        source = f"def score(x):\n    {_unpacked('x', count)} = x\n    return {body}\n"
        # The source is built from validated ints and floats only (no text from the file).
        scope: dict = {}
        exec(compile(source, "<relevance trees>", "exec"), scope)
        return scope["score"]

    @functools.cached_property
    def _compiled_walk(self):
        # Explanations ask this of every chosen message: one unrolled walk over all the trees
        # costs about a fifth less than finding each leaf and then replaying its path. Built, like
        # ``_compiled``, from validated ints and floats only.
        count = len(self.features)
        lines = [
            "def walk(x):",
            f"    {_unpacked('x', count)} = x",
            f"    {_unpacked('p', count)} = {(0.0,) * count!r}",
        ]
        for tree in self.trees:
            lines.extend(tree.walk_lines("    "))
        lines.append(f"    return [{_unpacked('p', count)}]")
        scope: dict = {}
        exec(compile("\n".join(lines), "<relevance walk>", "exec"), scope)
        return scope["walk"]

    def probability(self, row: Sequence[float]) -> float:
        z = self._compiled(row)
        z = z if -30.0 <= z <= 30.0 else (-30.0 if z < -30.0 else 30.0)  # as in LogisticStage
        return 1.0 / (1.0 + math.exp(-z))

    def contributions(self, row: Sequence[float]) -> list[float]:
        """Each feature's share of the log-odds: the value changes along the path it decided."""
        return self._compiled_walk(row)
