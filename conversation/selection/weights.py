"""The shipped relevance weights, read and checked before the bot relies on them.

A weights file that is missing, not JSON, or of the wrong shape (a tree deeper than the
evaluator allows, a stage over other features than the code's) stops ``run``, ``replay`` and the
studio with one line naming the file and the fault, never a traceback mid-answer: the fix is to
restore the file or refit it (``python -m lab.train_relevance``).
"""

from __future__ import annotations

import functools
import json
import math
from importlib import resources
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from conversation.selection.features import (
    ANSWER_SCORE,
    FEATURES,
    MEANING_SECOND_FEATURES,
    SECOND_FEATURES,
    THIRD_FEATURES,
)
from conversation.selection.relevance import RelevanceModel
from conversation.selection.stages import LogisticStage, Tree, TreeStage

WEIGHTS_FILE = "relevance_weights.json"
# The score fitted with the sentence model's embeddings (``conversation.selection.meaning``),
# used where the model loads and the trigger's meaning is known.
MEANING_WEIGHTS_FILE = "relevance_weights_meaning.json"


class WeightsError(ValueError):
    """The weights file cannot be used; the message is one line naming the file and the fault."""


@functools.cache
def load_model() -> RelevanceModel:
    """The model shipped with the package (fitted on the IRC training split)."""
    return load_model_from(
        Path(str(resources.files("conversation.selection").joinpath(WEIGHTS_FILE)))
    )


@functools.cache
def load_meaning_model() -> RelevanceModel | None:
    """The score that reads meaning, shipped beside the plain one; None when not shipped."""
    path = Path(str(resources.files("conversation.selection").joinpath(MEANING_WEIGHTS_FILE)))
    return load_model_from(path) if path.exists() else None


WeightsT = TypeVar("WeightsT", bound=BaseModel)


def read_weights(path: Path, model_type: type[WeightsT], refit: str) -> WeightsT:
    """A weights file read into its model; a missing, unreadable or malformed file is one
    WeightsError line ending with ``refit`` (what to do about it). Shared by every fitted model
    the package ships, so each says its faults the same way."""
    try:
        return model_type.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except OSError as error:
        raise WeightsError(f"{path}: cannot be read ({error.strerror}); {refit}") from None
    except UnicodeDecodeError:
        raise WeightsError(f"{path}: not UTF-8 text; {refit}") from None
    except json.JSONDecodeError as error:
        raise WeightsError(
            f"{path}: not valid JSON ({error.msg}, line {error.lineno}); {refit}"
        ) from None
    except RecursionError:
        raise WeightsError(f"{path}: nested too deeply to be weights; {refit}") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "top level"
        raise WeightsError(f"{path}: {where}: {first['msg']}; {refit}") from None


def load_model_from(path: Path) -> RelevanceModel:
    """The model in ``path``; a missing, unreadable or malformed file is one WeightsError line."""
    refit = "restore it or run python -m lab.train_relevance"
    model = read_weights(path, RelevanceModel, refit)
    third = model.third.features if model.third is not None else THIRD_FEATURES
    if (
        model.first.features != FEATURES
        or model.second.features not in (SECOND_FEATURES, MEANING_SECOND_FEATURES)
        or third != THIRD_FEATURES
    ):
        raise WeightsError(f"{path}: fitted for other features; run python -m lab.train_relevance")
    if model.answers is not None and model.answers.features != (
        *model.deciding.features,
        ANSWER_SCORE,
    ):
        raise WeightsError(
            f"{path}: answers: fitted for other features; run python -m lab.train_relevance"
        )
    if model.answers is None and model.answer_best > 0:
        # The operator asked for the likeliest answered messages and would silently get none.
        raise WeightsError(
            f"{path}: answer_best is {model.answer_best} but answers (the ranking it reads) "
            f"is missing; set answer_best to 0 or {refit}"
        )
    fault = _shape_fault(model)
    if fault is not None:
        raise WeightsError(f"{path}: {fault}; {refit}")
    if not 0.0 <= model.second_look_floor <= model.always_best_floor:
        # Above the floor of the best few, a skipped candidate could be forced in unexplained.
        raise WeightsError(
            f"{path}: second_look_floor must lie between 0 and always_best_floor; {refit}"
        )
    return model


# The explaining walk nests one indented block per level, and Python allows 100 levels of
# indentation (depth 98 at most); the scoring expression would take about 200.
MAX_TREE_DEPTH = 64


def _shape_fault(model: RelevanceModel) -> str | None:
    """What would break scoring mid-answer, said once, at load (see ``stages_fault``)."""
    stages = {"second": model.second}
    if model.third is not None:
        stages["third"] = model.third
    if model.answers is not None:
        stages["answers"] = model.answers
    return stages_fault("first", model.first, stages)


def stages_fault(label: str, first: LogisticStage, stages: dict[str, TreeStage]) -> str | None:
    """What would break a fitted model of a logistic look and tree stages (the relevance and
    the follow models alike): an array of the wrong length, a child index that leads outside
    its tree or back up it, a number that is not finite; messages name each part by label."""
    sizes = {len(first.features), len(first.means), len(first.scales), len(first.weights)}
    if len(sizes) != 1:
        return f"{label}: features, means, scales and weights differ in length"
    for label, stage in stages.items():
        if len(stage.means) != len(stage.features):
            return f"{label}: features and means differ in length"
    numbers = [*first.means, *first.scales, *first.weights, first.bias]
    for stage in stages.values():
        numbers.extend((*stage.means, stage.base))
    if not all(math.isfinite(number) for number in numbers) or 0.0 in first.scales:
        return "a number that is not finite (or a zero scale)"
    for label, stage in stages.items():
        for index, tree in enumerate(stage.trees):
            fault = tree_fault(tree, len(stage.features))
            if fault is not None:
                return f"{label}.trees.{index}: {fault}"
    return None


def tree_fault(tree: Tree, features: int) -> str | None:
    """What would break one tree mid-answer: arrays of other lengths, a number that is not
    finite, a node leading outside the tree, back up it, or too deep (shared with following)."""
    nodes = len(tree.feature)
    arrays = (tree.threshold, tree.left, tree.right, tree.values)
    if nodes == 0 or any(len(array) != nodes for array in arrays):
        return "node arrays empty or of different lengths"
    if not all(math.isfinite(number) for number in (*tree.threshold, *tree.values)):
        return "a number that is not finite"
    depth, parents = [0] * nodes, [0] * nodes
    for node, feature in enumerate(tree.feature):
        children = (tree.left[node], tree.right[node])
        if feature >= 0 and (feature >= features or not all(node < c < nodes for c in children)):
            return f"node {node} points outside the tree or its features"
        for child in children if feature >= 0 else ():
            depth[child], parents[child] = depth[node] + 1, parents[child] + 1
            if not math.isfinite(tree.values[child] - tree.values[node]):
                return f"node {child} changes the value by more than a float holds"
    # Trees compile to nested code: a shared node doubles it, depth is bounded.
    if max(parents) > 1 or max(depth) > MAX_TREE_DEPTH:
        return f"a node with two parents, or deeper than {MAX_TREE_DEPTH}"
    return None
