"""Fitting for the relevance score with numpy (training only; the bot evaluates in pure Python).

A logistic model by Newton's method and gradient-boosted regression trees on a logistic loss
(histogram splits on quantile bins, Newton leaf values, shrinkage), small enough to fit a few
hundred thousand candidates in about a minute on a busy core.
"""

from __future__ import annotations

import math

import numpy as np

from conversation.selection import Tree


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, rounds: int = 8):
    """Standardise, then Newton's method on an L2-regularised logistic loss.

    Returns means, scales, weights and bias, as lists.
    """
    means = x.mean(axis=0)
    scales = x.std(axis=0)
    scales[scales < 1e-6] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - means) / scales])
    w = np.zeros(z.shape[1])
    ridge = l2 * np.eye(len(w))
    ridge[0, 0] = 0.0  # the bias is not shrunk
    for round_ in range(rounds):
        p = sigmoid(z @ w)
        loss = -np.mean(np.log(np.where(y > 0, p, 1 - p) + 1e-300))
        print(f"  newton round {round_ + 1}: loss {loss:.4f}", flush=True)
        gradient = z.T @ (p - y) + ridge @ w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + ridge
        w -= np.linalg.solve(hessian, gradient)
    return means.tolist(), scales.tolist(), w[1:].tolist(), float(w[0])


def fit_trees(
    x: np.ndarray,
    y: np.ndarray,
    *,
    trees: int = 60,
    depth: int = 4,
    rate: float = 0.1,
    bins: int = 32,
    l2: float = 1.0,
    min_hessian: float = 5.0,
) -> tuple[float, list[Tree]]:
    """Boosted trees on the logistic loss; returns the base log-odds and the trees."""
    n, k = x.shape
    edges: list[np.ndarray] = []
    binned = np.zeros((n, k), dtype=np.int16)
    for f in range(k):
        cuts = np.unique(np.quantile(x[:, f], np.linspace(0, 1, bins + 1)[1:-1]))
        cuts = cuts[cuts > x[:, f].min()]
        edges.append(cuts)
        binned[:, f] = np.searchsorted(cuts, x[:, f], side="right")
    rate_of_positives = float(y.mean())
    base = math.log(rate_of_positives / (1 - rate_of_positives))
    margin = np.full(n, base)
    fitted: list[Tree] = []
    for round_ in range(trees):
        p = sigmoid(margin)
        g = p - y
        h = p * (1 - p)
        feature: list[int] = [-1]
        threshold: list[float] = [0.0]
        left: list[int] = [-1]
        right: list[int] = [-1]
        values: list[float] = [0.0]
        level = [(0, np.arange(n))]
        for d in range(depth + 1):
            following = []
            for node, rows in level:
                gs, hs = float(g[rows].sum()), float(h[rows].sum())
                values[node] = -gs / (hs + l2) * rate
                split = None
                if d < depth and hs > 2 * min_hessian:
                    split = _best_split(binned[rows], g[rows], h[rows], edges, l2, min_hessian)
                if split is None:
                    margin[rows] += values[node]
                    continue
                f, b = split
                goes_left = binned[rows, f] < b
                children = []
                for part in (rows[goes_left], rows[~goes_left]):
                    feature.append(-1)
                    threshold.append(0.0)
                    left.append(-1)
                    right.append(-1)
                    values.append(0.0)
                    children.append(len(values) - 1)
                    following.append((children[-1], part))
                feature[node], threshold[node] = f, float(edges[f][b - 1])
                left[node], right[node] = children
            level = following
        fitted.append(
            Tree(
                feature=tuple(feature),
                threshold=tuple(threshold),
                left=tuple(left),
                right=tuple(right),
                values=tuple(round(v, 6) for v in values),
            )
        )
        if (round_ + 1) % 20 == 0:
            loss = -np.mean(np.log(np.where(y > 0, sigmoid(margin), 1 - sigmoid(margin)) + 1e-300))
            print(f"  tree {round_ + 1}: loss {loss:.4f}", flush=True)
    return base, fitted


def _best_split(binned, g, h, edges, l2: float, min_hessian: float) -> tuple[int, int] | None:
    """The feature and bin with the largest gain, or None when no split helps."""
    total_g, total_h = g.sum(), h.sum()
    parent = total_g * total_g / (total_h + l2)
    best: tuple[float, int, int] | None = None
    for f, cuts in enumerate(edges):
        count = len(cuts) + 1
        if count < 2:
            continue
        left_g = np.cumsum(np.bincount(binned[:, f], weights=g, minlength=count))[:-1]
        left_h = np.cumsum(np.bincount(binned[:, f], weights=h, minlength=count))[:-1]
        ok = (left_h >= min_hessian) & (total_h - left_h >= min_hessian)
        if not ok.any():
            continue
        gain = (
            left_g**2 / (left_h + l2) + (total_g - left_g) ** 2 / (total_h - left_h + l2) - parent
        )
        gain[~ok] = -1.0
        b = int(np.argmax(gain))
        if gain[b] > 1e-6 and (best is None or gain[b] > best[0]):
            best = (float(gain[b]), f, b + 1)
    return None if best is None else (best[1], best[2])
