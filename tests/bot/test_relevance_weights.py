"""A relevance weights file that is missing or broken stops ``run``, ``replay`` and the studio
with one line naming the file and what is wrong, never a traceback or a failure mid-answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conversation.selection.weights import (
    MAX_TREE_DEPTH,
    WEIGHTS_FILE,
    WeightsError,
    load_model_from,
)
from tests.fakes.code_copy import code_copy_with, run_bot_in
from tests.fakes.harness import EXAMPLE, ROOT

SHIPPED = ROOT / "conversation" / "selection" / WEIGHTS_FILE


def _weights(change: Callable[[dict], None]) -> str:
    data = json.loads(SHIPPED.read_text(encoding="utf-8"))
    change(data)
    return json.dumps(data)


def _cut_tree(data: dict) -> None:
    data["second"]["trees"][0]["left"] = data["second"]["trees"][0]["left"][:-1]


def _loop_tree(data: dict) -> None:
    tree = data["second"]["trees"][0]
    inner = next(node for node, feature in enumerate(tree["feature"]) if feature >= 0)
    tree["left"][inner] = inner  # back to itself: an endless walk


def _shared_node(data: dict) -> None:
    tree = data["second"]["trees"][0]
    root_left = tree["left"][0]
    tree["right"][0] = root_left  # both branches of the root lead to one node


def _deep_tree(data: dict) -> None:
    depth = 200  # a chain: compiled, it nests past what Python's parser takes
    data["second"]["trees"][0] = {
        "feature": [0] * depth + [-1, -1],
        "threshold": [0.5] * (depth + 2),
        "left": [node + 1 for node in range(depth)] + [-1, -1],
        "right": [depth + 1] * depth + [-1, -1],
        "values": [0.0] * (depth + 2),
    }


def _chain_tree(depth: int) -> dict:
    """A chain of ``depth`` splits on feature 0, each leaf worth its depth."""
    return {
        "feature": [0] * depth + [-1] * (depth + 1),
        "threshold": [node + 0.5 for node in range(depth)] + [0.0] * (depth + 1),
        "left": [depth + node for node in range(depth)] + [-1] * (depth + 1),
        "right": [node + 1 for node in range(depth - 1)] + [2 * depth] + [-1] * (depth + 1),
        "values": [0.0] * depth + [float(node) for node in range(depth + 1)],
    }


def _overflowing_change(data: dict) -> None:
    tree = data["second"]["trees"][0]
    tree.update(feature=[0, -1, -1], threshold=[0.5, 0.0, 0.0], left=[1, -1, -1])
    tree.update(right=[2, -1, -1], values=[1e308, -1e308, 0.0])  # each finite, the step is not


BROKEN = {
    "missing": (None, "cannot be read"),
    "truncated": ('{"first": {"features": [', "not valid JSON"),
    "not-utf8": (b"\xff\xfe{}", "not UTF-8"),
    "no-second-look": (_weights(lambda data: data.pop("second")), "second: Field required"),
    "text-for-a-number": (
        _weights(lambda data: data["first"].update(bias="high")),
        "first.bias",
    ),
    "other-features": (
        _weights(lambda data: data["first"]["features"].reverse()),
        "fitted for other features",
    ),
    "short-weights": (
        _weights(lambda data: data["first"]["weights"].pop()),
        "differ in length",
    ),
    "third-look-for-other-features": (
        _weights(lambda data: data.update(third=data["second"])),
        "fitted for other features",
    ),
    "cut-tree": (_weights(_cut_tree), "second.trees.0"),
    "looping-tree": (_weights(_loop_tree), "second.trees.0: node"),
    "shared-node": (_weights(_shared_node), "two parents"),
    "deep-tree": (_weights(_deep_tree), "deeper than"),
    "overflowing-change": (_weights(_overflowing_change), "more than a float holds"),
    "nested-json": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    "not-a-number": (
        _weights(lambda data: data["first"]["weights"].__setitem__(0, float("nan"))),
        "not finite",
    ),
}


def _write(path: Path, content: str | bytes | None) -> None:
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")


@pytest.mark.parametrize(("content", "fault"), BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_weights_file_is_one_line_naming_it(tmp_path, content, fault):
    path = tmp_path / WEIGHTS_FILE
    _write(path, content)
    with pytest.raises(WeightsError) as error:
        load_model_from(path)
    message = str(error.value)
    assert message.startswith(f"{path}: ") and fault in message
    assert "\n" not in message


def test_the_shipped_weights_load():
    assert load_model_from(SHIPPED).threshold > 0


def test_the_deepest_tree_allowed_scores_and_explains(tmp_path):
    """Explanations compile one nested block per level: the deepest tree the check lets through
    must compile there too, and say what the score says."""
    depth = MAX_TREE_DEPTH
    path = tmp_path / WEIGHTS_FILE
    path.write_text(
        _weights(lambda data: data["second"]["trees"].__setitem__(0, _chain_tree(depth)))
    )
    chain = load_model_from(path).second
    alone = chain.model_copy(update={"trees": chain.trees[:1], "base": 0.0})
    for reached in (0, depth // 2, depth):
        row = [float(reached)] * len(alone.features)  # passes ``reached`` splits, then leaves
        assert alone._compiled(row) == float(reached)
        parts = alone.contributions(row)
        assert parts[0] == float(reached) and not any(parts[1:])


@pytest.fixture
def broken_package(tmp_path: Path) -> Path:
    """A copy of the code whose weights file is cut short, imported ahead of the real one."""
    return code_copy_with(tmp_path, f"conversation/selection/{WEIGHTS_FILE}", '{"first": ')


@pytest.mark.parametrize(
    "command",
    [
        ["replay", str(EXAMPLE), "--no-model"],
        ["run"],
        ["studio", str(EXAMPLE), "--port", "0"],
    ],
    ids=["replay", "run", "studio"],
)
def test_commands_stop_with_one_line_on_a_broken_weights_file(broken_package, command):
    result = run_bot_in(broken_package, *command)
    weights = broken_package / "conversation" / "selection" / WEIGHTS_FILE
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: {weights}: not valid JSON (Expecting value, line 1); "
        "restore it or run python -m lab.train_relevance"
    ]
