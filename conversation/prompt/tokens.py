"""How many tokens a prompt costs, estimated without any tokenizer and calibrated per model.

No tokenizer file may be downloaded at run time and the operator's model is unknown (Llama,
Qwen, Mistral, GPT...), so the default is an estimate that errs on the side of *more* tokens:
every three bytes of UTF-8 count as one token. Real tokenizers give about four characters per
token for English prose and three for code; a CJK character (three bytes) is one to two tokens,
so the estimate is close there and generous elsewhere. Each message also pays the chat
template's framing (role markers, the speaker's name).

The generosity costs room, which calibration gives back: after each answer the server reports
the prompt's real ``prompt_tokens``, and :class:`Calibration` keeps a running ratio of real to
estimated tokens per model (stored, so it survives restarts). A small margin on top keeps a
calibrated estimate on the safe side of the window.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from conversation.graph.node import MessageNode

BYTES_PER_TOKEN = 3.0
MESSAGE_OVERHEAD = 8  # role markers and separators of one chat message, generously
REPLY_PRIMING = 4  # the template's "assistant, your turn" after the last message
IMAGE_TOKENS = 1100  # a high-detail image on OpenAI; local vision models use 576 or so
CALIBRATION_MARGIN = 1.05
MIN_RATIO, MAX_RATIO = 0.25, 4.0
MIN_SAMPLE_TOKENS = 64  # prompts smaller than this say more about the template than the text


def text_tokens(text: str) -> int:
    """Conservative token estimate of ``text`` (no framing)."""
    if not text:
        return 0
    if text.isascii():
        return math.ceil(len(text) / BYTES_PER_TOKEN)
    return math.ceil(len(text.encode("utf-8", "surrogatepass")) / BYTES_PER_TOKEN)


def node_tokens(node: MessageNode) -> int:
    """Uncalibrated estimate of one chat message: its text, its name, images, the framing."""
    tokens = MESSAGE_OVERHEAD + text_tokens(node.content)
    if node.name:
        tokens += text_tokens(node.name) + 1
    tokens += IMAGE_TOKENS * len(node.images)
    for call in node.tool_calls:
        tokens += MESSAGE_OVERHEAD + text_tokens(call.name) + text_tokens(call.arguments)
    return tokens


def prompt_tokens(nodes: Iterable[MessageNode]) -> int:
    """Uncalibrated estimate of a whole prompt."""
    return REPLY_PRIMING + sum(node_tokens(node) for node in nodes)


class Calibration(BaseModel):
    """Real over estimated prompt tokens for one model, as a running average.

    ``ratio`` 1.0 with no samples means "trust the conservative estimate as it is".
    """

    model_config = ConfigDict(frozen=True)

    ratio: float = Field(1.0, gt=0)
    samples: int = Field(0, ge=0)

    @property
    def factor(self) -> float:
        """What estimates are multiplied by: the learned ratio plus a margin, once learned."""
        return 1.0 if self.samples == 0 else self.ratio * CALIBRATION_MARGIN

    def observe(self, estimated: int, reported: int) -> Calibration:
        """A new calibration with one more (estimate, server count) pair.

        The first few samples weigh most, later ones move the average slowly, so one unusual
        prompt (all code, all emoji) cannot swing the budget. Implausible pairs are ignored.
        """
        if estimated < MIN_SAMPLE_TOKENS or reported <= 0:
            return self
        observed = min(max(reported / estimated, MIN_RATIO), MAX_RATIO)
        weight = max(1 / (self.samples + 1), 0.1)
        ratio = observed if self.samples == 0 else self.ratio + weight * (observed - self.ratio)
        # Never learn to estimate below a prompt the server really saw: a ratio under the one
        # just observed would, for this very prompt, overflow.
        if observed > ratio * CALIBRATION_MARGIN:
            ratio = observed / CALIBRATION_MARGIN
        return Calibration(ratio=ratio, samples=self.samples + 1)


class TokenCounter:
    """Estimates in the model's real tokens: the conservative estimate times the calibration."""

    def __init__(self, calibration: Calibration | None = None) -> None:
        self.calibration = calibration or Calibration()
        self._factor = self.calibration.factor

    def scale(self, raw: int) -> int:
        return math.ceil(raw * self._factor)

    def node(self, node: MessageNode) -> int:
        return self.scale(node_tokens(node))

    def prompt(self, nodes: Iterable[MessageNode]) -> int:
        return self.scale(prompt_tokens(nodes))
