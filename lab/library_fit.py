"""Fitting the relevance score with maintained libraries (training only: ``.[train]``).

The first look is scikit-learn's logistic regression over standardised features, the second
LightGBM's boosted trees; both are exported into the weights format the bot evaluates in pure Python
(``conversation.selection.relevance``), so the bot never imports either library. LightGBM sends a
value equal to a split's threshold to the left (``x <= t``) where the shipped trees ask ``x < t``:
each threshold is exported as the next float up, which sends every value the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import lightgbm
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from conversation.selection import Tree

# The trees: enough to see interactions, few and shallow enough to score a hundred candidates
# in about a millisecond of pure Python. ``num_leaves`` 16 with depth 4 is a full tree.
TREE_PARAMS: dict[str, object] = {
    "objective": "binary",
    "learning_rate": 0.15,
    "num_leaves": 16,
    "max_depth": 4,
    "min_sum_hessian_in_leaf": 20.0,
    "min_data_in_leaf": 100,
    "lambda_l2": 1.0,
    "feature_fraction": 1.0,
    "bagging_fraction": 1.0,
    "max_bin": 63,
    "num_threads": 1,
    "deterministic": True,
    "force_row_wise": True,
    "seed": 13,
    "verbose": -1,
}
TREES = 80


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0):
    """Means, scales, weights and bias of an L2-regularised logistic model (scikit-learn)."""
    scaler = StandardScaler().fit(x)
    scales = np.where(scaler.scale_ < 1e-6, 1.0, scaler.scale_)
    model = LogisticRegression(C=1.0 / l2, max_iter=500)
    model.fit((x - scaler.mean_) / scales, y)
    weights = model.coef_[0].tolist()
    return scaler.mean_.tolist(), scales.tolist(), weights, float(model.intercept_[0])


def fit_trees(
    x: np.ndarray,
    y: np.ndarray,
    *,
    trees: int = TREES,
    params: dict[str, object] | None = None,
) -> tuple[float, list[Tree]]:
    """LightGBM's boosted trees on the logistic loss; the base log-odds and the trees.

    LightGBM folds the base log-odds into its first tree, so the base returned is 0.
    """
    chosen = {**TREE_PARAMS, **(params or {})}
    booster = lightgbm.train(chosen, lightgbm.Dataset(x, label=y), num_boost_round=trees)
    return 0.0, [export_tree(info["tree_structure"]) for info in booster.dump_model()["tree_info"]]


def export_tree(root: dict) -> Tree:
    """One tree of ``Booster.dump_model()`` as flat node arrays (numbered depth first)."""
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    values: list[float] = []

    def add(node: dict) -> int:
        index = len(feature)
        feature.append(-1)
        threshold.append(0.0)
        left.append(-1)
        right.append(-1)
        if "leaf_value" in node:
            values.append(round(float(node["leaf_value"]), 6))
            return index
        if node.get("decision_type") != "<=":
            raise ValueError(f"unsupported split {node.get('decision_type')!r}")
        values.append(round(float(node["internal_value"]), 6))
        feature[index] = int(node["split_feature"])
        threshold[index] = math.nextafter(float(node["threshold"]), math.inf)
        left[index] = add(node["left_child"])
        right[index] = add(node["right_child"])
        return index

    add(root)
    return Tree(
        feature=tuple(feature),
        threshold=tuple(threshold),
        left=tuple(left),
        right=tuple(right),
        values=tuple(values),
    )


def tree_sum(trees: Sequence[Tree], row: Sequence[float]) -> float:
    """What the exported trees add for one row (to check the export against LightGBM)."""
    total = 0.0
    for tree in trees:
        node = 0
        while tree.feature[node] >= 0:
            go_left = row[tree.feature[node]] < tree.threshold[node]
            node = tree.left[node] if go_left else tree.right[node]
        total += tree.values[node]
    return total


def check(rows: int = 3000, seed: int = 3) -> list[str]:
    """What goes wrong when exported trees are scored in pure Python (empty: nothing).

    On synthetic data with an interaction and values on split points: the exported trees,
    compiled as the bot compiles them, give LightGBM's own raw scores; a value equal to a
    threshold goes left, as in LightGBM.
    """
    from conversation.selection import TreeStage

    rng = np.random.default_rng(seed)
    x = np.column_stack(
        [rng.random(rows), rng.integers(0, 2, rows).astype(float), rng.integers(0, 6, rows)]
    )
    z = 2.0 * x[:, 0] * x[:, 1] - 0.5 * x[:, 2] + 0.8
    y = (rng.random(rows) < 1 / (1 + np.exp(-z))).astype(float)
    params = {**TREE_PARAMS, "min_data_in_leaf": 20}
    booster = lightgbm.train(params, lightgbm.Dataset(x, label=y), num_boost_round=30)
    trees = [export_tree(info["tree_structure"]) for info in booster.dump_model()["tree_info"]]
    stage = TreeStage(features=("a", "b", "c"), means=(0.0,) * 3, base=0.0, trees=tuple(trees))
    faults = []
    for row, raw in zip(x.tolist(), booster.predict(x, raw_score=True).tolist(), strict=True):
        fast = math.log(stage.probability(row) / (1 - stage.probability(row)))
        if abs(tree_sum(trees, row) - raw) > 1e-4 or abs(fast - raw) > 1e-4:
            faults.append(f"row {row}: LightGBM {raw:.6f}, exported {fast:.6f}")
    edge = export_tree(
        {
            "split_feature": 0,
            "threshold": 2.0,
            "decision_type": "<=",
            "internal_value": 0.0,
            "left_child": {"leaf_value": -1.0},
            "right_child": {"leaf_value": 1.0},
        }
    )
    if tree_sum([edge], [2.0]) != -1.0 or tree_sum([edge], [math.nextafter(2.0, 3.0)]) != 1.0:
        faults.append("a value equal to a threshold does not go left")
    # The trees see that a matters only when b is set; a linear look could not.
    fitted = TreeStage(
        features=("a", "b", "c"), means=(0.0,) * 3, base=0.0, trees=tuple(fit_trees(x, y)[1])
    )
    with_b = fitted.probability([0.9, 1.0, 1.0]) - fitted.probability([0.1, 1.0, 1.0])
    without_b = fitted.probability([0.9, 0.0, 1.0]) - fitted.probability([0.1, 0.0, 1.0])
    if with_b < without_b + 0.1:
        faults.append(f"the interaction is not learned ({with_b:.3f} vs {without_b:.3f})")
    if fit_logistic(x, y)[2][2] >= 0:
        faults.append("the logistic look misses that more c is less likely")
    return faults


if __name__ == "__main__":
    problems = check()
    for problem in problems[:10]:
        print(problem)
    print("exported trees score as LightGBM does" if not problems else f"{len(problems)} faults")
    raise SystemExit(1 if problems else 0)
