"""The meaning extra in the running bot: what the gateway delivers is embedded off the event
loop, and answers go on as before (the real sentence model; skipped without the extra, failed
without it on CI: the ``sentence_model`` fixture)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from conversation.selection import MeaningStore
from tests.bot.test_read_history import asks
from tests.fakes.harness import BEN, CHANNEL, CHLOE, ELI, running_bot, settled

pytestmark = pytest.mark.meaning

LINES = [
    "my laptop's wifi drops every few minutes since the update",
    "which driver does it use? lspci -k shows it",
    "iwlwifi, the intel one",
    "try turning power saving off for the card",
]


async def test_the_bot_embeds_what_it_sees_and_answers_without_waiting(sentence_model: Any):
    async with running_bot() as bot:
        meanings = bot.client.meanings
        assert isinstance(meanings, MeaningStore) and meanings.embedder is sentence_model
        for i, line in enumerate(LINES):
            await bot.discord.user_says(CHANNEL, BEN if i % 2 else CHLOE, line)
        for _ in range(200):  # delivered through the gateway
            if len(meanings) + len(meanings._queued) >= len(LINES):
                break
            await asyncio.sleep(0.05)
        await settled(bot)
        await meanings.settled()
        assert len(meanings) >= len(LINES)  # each delivered message embedded once
        _, prompt = await asks(bot, ELI, "did power saving fix the wifi?")
        assert "power saving off" in prompt
        await meanings.settled()
        assert len(meanings) >= len(LINES) + 1  # the question too, after its answer began
        assert meanings.dropped == 0
