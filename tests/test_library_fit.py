"""LightGBM's trees, exported into the shipped weights format, score as LightGBM does."""

from __future__ import annotations

import math
import random

import pytest

np = pytest.importorskip("numpy")
lightgbm = pytest.importorskip("lightgbm")

from bench.library_fit import TREE_PARAMS, export_tree, fit_logistic, fit_trees, tree_sum  # noqa: E402
from conversation.relevance import LogisticStage, Tree, TreeStage  # noqa: E402


def _data(rows: int = 3000, seed: int = 3):
    rng = random.Random(seed)
    x = np.array([[rng.random(), rng.choice((0.0, 1.0)), rng.randint(0, 5)] for _ in range(rows)])
    # An interaction a linear model cannot see, and values exactly on likely split points.
    z = 2.0 * x[:, 0] * x[:, 1] - 0.5 * x[:, 2] + 0.8
    y = np.array([float(rng.random() < 1 / (1 + math.exp(-v))) for v in z])
    return x, y


def test_exported_trees_give_lightgbm_s_own_predictions():
    x, y = _data()
    params = {**TREE_PARAMS, "min_data_in_leaf": 20}
    booster = lightgbm.train(params, lightgbm.Dataset(x, label=y), num_boost_round=30)
    trees = [export_tree(info["tree_structure"]) for info in booster.dump_model()["tree_info"]]
    stage = TreeStage(features=("a", "b", "c"), means=(0.0, 0.0, 0.0), base=0.0, trees=tuple(trees))
    raw = booster.predict(x, raw_score=True)
    for row, expected in zip(x.tolist(), raw.tolist(), strict=True):
        assert tree_sum(trees, row) == pytest.approx(expected, abs=1e-4)
        assert stage.probability(row) == pytest.approx(1 / (1 + math.exp(-expected)), abs=1e-4)


def test_a_value_on_a_threshold_goes_where_lightgbm_sends_it():
    root = {
        "split_feature": 0,
        "threshold": 2.0,
        "decision_type": "<=",
        "internal_value": 0.0,
        "left_child": {"leaf_value": -1.0},
        "right_child": {"leaf_value": 1.0},
    }
    tree = export_tree(root)
    assert isinstance(tree, Tree)
    assert tree_sum([tree], [2.0]) == -1.0  # LightGBM: 2.0 <= 2.0 goes left
    assert tree_sum([tree], [math.nextafter(2.0, math.inf)]) == 1.0


def test_the_library_fit_learns_the_interaction():
    x, y = _data()
    base, trees = fit_trees(x, y, trees=40)
    means, scales, weights, bias = fit_logistic(x, y)
    first = LogisticStage(
        features=("a", "b", "c"), means=means, scales=scales, weights=weights, bias=bias
    )
    assert weights[2] < 0  # more of c, less likely
    stage = TreeStage(features=("a", "b", "c"), means=(0.0,) * 3, base=base, trees=tuple(trees))
    # The trees see that a matters only when b is set; the logistic look cannot.
    gain = stage.probability([0.9, 1.0, 1.0]) - stage.probability([0.1, 1.0, 1.0])
    no_gain = stage.probability([0.9, 0.0, 1.0]) - stage.probability([0.1, 0.0, 1.0])
    assert gain > no_gain + 0.1
    assert 0.0 < first.score([0.5, 1.0, 1.0])[0] < 1.0
