"""A person's roles when they write in a DM, where Discord sends a user without any.

``[permissions] blocked_roles`` and ``allowed_roles`` must follow a member into DMs, or a muted
member would simply DM the bot. A role id belongs to exactly one guild, so only the guilds that
own a configured role are asked about: the member from nextcord's cache, else fetched (one REST
call per such guild, usually one). Answers are kept briefly so a burst of DMs costs one lookup.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import nextcord

from bot.discord.visibility import REQUEST_FAILED

log = logging.getLogger(__name__)

REMEMBER_SECONDS = 30.0  # a role taken away applies to DMs within this time
REMEMBER_PEOPLE = 1024


class RoleLookupFailed(Exception):
    """Discord did not say whether the person is a member (an outage, missing access)."""


class DmRoles:
    """The roles (of those the config names) a person holds in the guilds the bot shares."""

    def __init__(
        self,
        guilds: Callable[[], Iterable[Any]],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._guilds = guilds
        self._clock = clock
        self._known: OrderedDict[tuple[int, frozenset[int]], tuple[float, frozenset[int]]] = (
            OrderedDict()
        )

    async def held(self, user_id: int, role_ids: Iterable[int]) -> frozenset[int]:
        """Which of ``role_ids`` the person holds; raises ``RoleLookupFailed`` when unknown."""
        wanted = frozenset(role_ids)
        key = (user_id, wanted)
        now = self._clock()
        remembered = self._known.get(key)
        if remembered is not None and now - remembered[0] < REMEMBER_SECONDS:
            return remembered[1]
        held: set[int] = set()
        for guild in self._guilds():
            if not any(guild.get_role(role_id) is not None for role_id in wanted):
                continue  # none of the configured roles is this guild's
            member = guild.get_member(user_id)
            if member is None:
                try:
                    member = await guild.fetch_member(user_id)
                except nextcord.NotFound:
                    continue  # not a member there: no roles there
                except nextcord.HTTPException as error:
                    raise RoleLookupFailed(
                        f"guild {guild.id}: {error.status} {error.text}"
                    ) from error
                except REQUEST_FAILED as error:  # the connection, not an answer
                    raise RoleLookupFailed(f"guild {guild.id}: {error!r}") from error
            held |= {role.id for role in member.roles} & wanted
        result = frozenset(held)
        self._known[key] = (now, result)
        self._known.move_to_end(key)
        while len(self._known) > REMEMBER_PEOPLE:
            self._known.popitem(last=False)
        return result
