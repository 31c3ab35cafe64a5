"""The slash commands, registered on the client at start (``register_commands``): ``/context``
(which messages an answer used, and why: ``explain_for``), ``/fresh`` (the conversation starts
over here), ``/model`` (its rules in ``bot.serve.model_command``) and ``/catchup`` (the
conversations since the asker last spoke, summarised: ``bot.answering.catchup``).
"""

from __future__ import annotations

import argparse
import logging

import nextcord

from bot.answering.answerer import Answerer
from bot.answering.catchup import Catchup, CatchupAsk
from bot.answering.forgotten import CATCHUP_COMMAND
from bot.config.validators import snowflake
from bot.discord.limits import DISCORD_MESSAGE_LIMIT
from bot.discord.visibility import may_view_channel
from bot.serve.model_command import model_choices, model_command_text
from bot.storage import Store, StoreError, not_in_store, render_text, without_linked_text
from conversation.selection import SEAL_TEXT, is_seal
from conversation.sources import CacheRegistry

CATCHUP_FAILED = "The catch-up failed; the bot's log says why."
log = logging.getLogger(__name__)
FRESH_REFUSED = "Only members who may manage messages here can start the context over."


def register_commands(
    client: nextcord.Client, answerer: Answerer, store: Store | None, caches: CacheRegistry
) -> None:
    """``/context`` reads ``store`` (and ``caches`` for the latest answer in a channel);
    ``/model`` the answerer's channels as they are when it is used."""
    _register_context(client, store, caches)
    _register_fresh(client)
    _register_model(client, answerer)
    _register_catchup(client, answerer.catchup or Catchup(answerer, store, client))


def _register_context(client: nextcord.Client, store: Store | None, caches: CacheRegistry) -> None:
    @client.slash_command(
        name="context",
        description="Show which messages the bot's latest answer here used, and why.",
    )
    async def context_command(
        interaction: nextcord.Interaction,
        message_id: str | None = nextcord.SlashOption(
            description="An answer (or its trigger) to explain; default: the latest answer",
            required=False,
            default=None,
        ),
    ) -> None:
        asker = interaction.user
        text = (
            await explain_for(client, store, caches, interaction.channel_id, message_id, asker)
            if asker is not None
            else "I cannot tell who is asking."
        )
        await interaction.response.send_message(text, ephemeral=True)


def _register_fresh(client: nextcord.Client) -> None:
    @client.slash_command(
        name="fresh",
        description="Start the conversation over: the bot reads nothing said here before it.",
    )
    async def fresh_command(interaction: nextcord.Interaction) -> None:
        in_dm = interaction.guild_id is None
        if not in_dm and not interaction.permissions.manage_messages:
            await interaction.response.send_message(FRESH_REFUSED, ephemeral=True)
            return
        await interaction.response.send_message(SEAL_TEXT)


def _register_model(client: nextcord.Client, answerer: Answerer) -> None:
    @client.slash_command(
        name="model",
        description="List the models, say which answers here, or choose one for this channel.",
        # Discord hides it from the others; the handler refuses them all the same (and in
        # DMs, where there is no server to manage).
        default_member_permissions=nextcord.Permissions(manage_guild=True),
    )
    async def model_command(
        interaction: nextcord.Interaction,
        name: str | None = nextcord.SlashOption(
            description="A model to answer with in this channel until the next restart or "
            "reload; 'default' goes back to the config's",
            required=False,
            default=None,
            # The named models are fixed until a restart, so Discord can offer them.
            choices=model_choices(answerer.config) or None,
        ),
    ) -> None:
        text = model_command_text(
            answerer.channels,
            interaction.channel,
            may_choose=interaction.guild_id is not None and interaction.permissions.manage_guild,
            name=name,
        )
        await interaction.response.send_message(text, ephemeral=True)


def _register_catchup(client: nextcord.Client, catchup: Catchup) -> None:
    @client.slash_command(
        name=CATCHUP_COMMAND,
        description="What did I miss? The conversations here since you last spoke, with links.",
    )
    async def catchup_command(
        interaction: nextcord.Interaction,
        hours: float | None = nextcord.SlashOption(
            description="Over the last hours instead of since you last spoke (bounded)",
            required=False,
            default=None,
            min_value=0.1,
            max_value=168,
        ),
    ) -> None:
        channel, asker = interaction.channel, interaction.user
        if channel is None or asker is None or interaction.id is None:
            await interaction.response.send_message("I cannot tell who is asking.", ephemeral=True)
            return
        ephemeral = catchup.settings(channel).ephemeral
        # The summaries take a model call each: Discord wants an answer within 3 s.
        await interaction.response.defer(ephemeral=ephemeral)
        try:
            pages = await catchup.answer(CatchupAsk(channel, asker, interaction.id, hours))
        except Exception:  # the asker is told, not left with "thinking…" forever
            log.exception("/catchup in channel %s failed", interaction.channel_id)
            pages = [CATCHUP_FAILED]
        quiet = nextcord.AllowedMentions.none()
        await interaction.edit_original_message(content=pages[0], allowed_mentions=quiet)
        for page in pages[1:]:
            await interaction.followup.send(page, ephemeral=ephemeral, allowed_mentions=quiet)


async def explain_for(
    client: nextcord.Client,
    store: Store | None,
    caches: CacheRegistry,
    channel_id: int | None,
    message_id: str | None,
    asker: nextcord.abc.User,
) -> str:
    """The text of ``/context``: short enough for one ephemeral Discord message.

    An answer from a channel the asker cannot view is "not found", worded exactly like an
    id the store never saw (see ``bot.discord.visibility``).
    """
    if store is None:
        return "Answers are not being recorded here ([storage] is not set up)."
    target: int | None = None
    if message_id:
        try:
            target = snowflake(message_id)
        except argparse.ArgumentTypeError:
            return "That is not a message id (right-click a message, Copy Message ID)."
    elif channel_id is not None and client.user is not None:
        target = _latest_answer(caches, channel_id, client.user.id)
    if target is None:
        return "I have not answered anything in this channel since I started."
    try:
        explanation = await store.explain_async(target)
    except StoreError as error:
        return str(error)
    if not await may_view_channel(
        client,
        asker,
        guild_id=explanation.guild_id,
        channel_id=explanation.channel_id,
        dm_participant_id=explanation.trigger_author_id,
        restricted=any(e.action == "history_restricted" for e in explanation.work_log),
    ):
        return str(not_in_store(target))
    return render_text(without_linked_text(explanation), limit=DISCORD_MESSAGE_LIMIT)


def _latest_answer(caches: CacheRegistry, channel_id: int, bot_id: int) -> int | None:
    """The id of the bot's latest message in the channel's cache (not a ``/fresh`` seal)."""
    cache = caches.get(channel_id)
    mine = (
        [m for m in cache.messages() if m.author.id == bot_id and not is_seal(m, bot_id)]
        if cache
        else []
    )
    return mine[-1].id if mine else None
