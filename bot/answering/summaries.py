"""Who writes a channel's summaries, and how: the model call behind ``SummaryPolicy``.

A summary is written by the channel's model, or by the ``[models.NAME]`` that ``[context]
summary_model`` names (a cheaper one), with ``summary_prompt`` as its instructions and at most
``summary_tokens`` of answer. It is one request with no tools, not streamed; what to do when it
fails is ``conversation.memory.summary``'s (a plain cut, logged).
"""

from __future__ import annotations

from bot.config.model_settings import ModelSettings
from bot.model.client import ModelClient
from conversation.common import ContextSettings
from conversation.memory import SummaryPolicy


class SummaryTooLongError(Exception):
    """The model stopped at ``max_tokens``: what it wrote is a half summary, never kept."""


def summary_policy(
    context: ContextSettings, client: ModelClient, settings: ModelSettings
) -> SummaryPolicy | None:
    """How the channel's summaries are written (None: ``summarize = false``); ``client`` is
    the writing model's endpoint, ``settings`` that model's ``[model]`` settings."""
    if not context.summarize:
        return None
    writer = client.with_settings(
        settings.model_copy(update={"max_tokens": context.summary_tokens, "stream": False})
    )
    prompt = context.summary_prompt

    async def write(transcript: str) -> str:
        completion = await writer.complete(
            [{"role": "system", "content": prompt}, {"role": "user", "content": transcript}]
        )
        if completion.finish_reason == "length":
            raise SummaryTooLongError(
                f"the model reached summary_tokens={context.summary_tokens} before it finished"
            )
        return completion.text

    return SummaryPolicy(
        write=write,
        max_tokens=context.summary_tokens,
        timeout_seconds=context.summary_timeout_seconds,
    )
