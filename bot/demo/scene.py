"""The demo's scene played through the real bot: members talk in a stand-in Discord channel and
the real ``ThreadwiseClient`` answers, records and follows as it would in production.

The scene is written so that each behaviour worth seeing happens once: a mention answered, a
follow-up without a mention answered (and explained as followed), a neighbouring conversation left
alone, and at the end Ben's ``/catchup`` (the conversations since he spoke, with links). What the
transcript says is what the bot did, read from the stand-in Discord and the store, never what the
script hoped for: with another model or other ``[triggers]`` settings the same scene may go
otherwise, and the transcript says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from bot.answering.recording import InteractionRecorder
from bot.answering.result import AnswerResult
from bot.config.schema import Config
from bot.demo.discord_server import FakeDiscord
from bot.demo.openai_server import Answer, FakeOpenAI, RecordedRequest
from bot.model.client import ModelClient
from bot.serve.client import ThreadwiseClient
from bot.storage import Store
from conversation.replay import ChannelExport, DceChannel, DceGuild

GUILD_ID = 1_400_000_000_000_000_000
CHANNEL_ID = 1_400_000_000_000_000_001
CHANNEL_NAME = "ops-help"
BOT_ID = 1_400_000_000_000_000_100
BOT_NAME = "threadwise"
MEMBERS = {
    "ana": (1_400_000_000_000_000_101, "Ana"),
    "ben": (1_400_000_000_000_000_102, "Ben"),
    "eli": (1_400_000_000_000_000_103, "Eli"),
    "dev": (1_400_000_000_000_000_104, "Dev"),
}
MENTION = f"<@{BOT_ID}>"


@dataclass(frozen=True)
class Line:
    """One member's message; ``{bot}`` in the text is a mention of the bot."""

    member: str
    text: str


SCENE = (
    Line("ana", "The nightly backup failed again: disk full on the NAS."),
    Line("ben", "I can clear last month's snapshots after lunch."),
    Line("eli", "Who is up for pizza at noon?"),
    Line("dev", "Count me in, Eli."),
    Line("ana", "{bot} how do I find what is filling up the NAS before the next backup?"),
    Line("ana", "and can the backup job delete snapshots older than a week by itself?"),
    Line("eli", "Great, I'll book a table for four then."),
)

# What the stand-in model says to the scene's two questions, in order (a canned model: the
# point is what the bot sends it and when, which the explanation shows).
STAND_IN_ANSWERS = (
    "Run `du -xh --max-depth=2 /volume1 | sort -h | tail` on the NAS to see the biggest "
    "folders; old snapshots and the backup job's temporary files are the usual suspects.",
    "Yes: give the job a retention rule, e.g. `--keep-within 7d` with borg or a nightly "
    "`find /volume1/snapshots -maxdepth 1 -mtime +7 -exec rm -r {} +`, then check the first "
    "run by hand.",
)


@dataclass
class Said:
    """A line as the channel saw it, and what the bot did about it."""

    author: str
    text: str
    message_id: int
    answer: str | None = None  # the bot's posted text, when it answered
    answer_ids: list[int] = field(default_factory=list)
    followed: str | None = None  # why it answered without a mention
    error: str | None = None  # the answer failed (the model did not answer, say)
    bot_had_spoken: bool = False  # before this line: only then could it follow this one


class AnswerWatch:
    """The recorder of the demo's bot: records each answer in the store, then hands it to the
    scene, which so learns when an answer is complete (posted, edited and stored)."""

    def __init__(self, store: Store) -> None:
        self._record = InteractionRecorder(store)
        self.done: asyncio.Queue[AnswerResult] = asyncio.Queue()

    async def __call__(self, result: AnswerResult) -> None:
        await self._record(result)
        await self.done.put(result)


@contextlib.asynccontextmanager
async def stand_in_discord() -> AsyncIterator[FakeDiscord]:
    """A stand-in Discord with the scene's server, channel and members, on 127.0.0.1."""
    async with FakeDiscord(bot_id=BOT_ID, bot_name=BOT_NAME) as discord:
        await discord.load_log(
            ChannelExport(
                path="demo",
                guild=DceGuild(id=str(GUILD_ID), name="Demo server"),
                channel=DceChannel(id=str(CHANNEL_ID), name=CHANNEL_NAME, topic="Ask the ops team"),
                messages=(),
            )
        )
        for user_id, nickname in MEMBERS.values():
            discord.add_user(user_id, nickname.lower(), nick=nickname)
        yield discord


CATCHUP_MEMBER = "ben"  # back after lunch: /catchup shows him what he missed


def stand_in_summary(request: RecordedRequest) -> Answer | None:
    """A ``/catchup`` summary from the numbered messages it is sent: the first and the last,
    each citing its number (None for any other request: the stand-in echoes)."""
    numbered = [m["content"] for m in request.messages if m["role"] == "user"]
    if not numbered or not all(re.match(r"\[\d+\] ", text) for text in numbered):
        return None
    first, last = numbered[0], numbered[-1]
    lines = [f"- {_gist(first)} [1]"]
    if len(numbered) > 1:
        lines.append(f"- then {_gist(last)} [{len(numbered)}]")
    return Answer(text="\n".join(lines))


def _gist(numbered: str) -> str:
    text = numbered.split("] ", 1)[1]
    return text if len(text) <= 70 else text[:69] + "\u2026"


@contextlib.asynccontextmanager
async def stand_in_model() -> AsyncIterator[FakeOpenAI]:
    """A stand-in OpenAI-compatible server that gives the scene's answers and summaries, then
    echoes."""
    async with FakeOpenAI() as model:
        model.queue(*(Answer(text=text) for text in STAND_IN_ANSWERS))
        model.script(stand_in_summary)
        yield model


def shown(text: str, names: dict[int, str]) -> str:
    """Message text as a member reads it: ``<@id>`` shown as ``@name``."""
    return re.sub(r"<@!?(\d+)>", lambda m: "@" + names.get(int(m[1]), m[1]), text)


class Scene:
    """Plays :data:`SCENE` against a running client, calling ``show`` for each line as it
    happens (the transcript prints them), and keeps what was said for the end."""

    def __init__(
        self,
        discord: FakeDiscord,
        watch: AnswerWatch,
        config: Config,
        show: Callable[[Said], None],
        *,
        answer_timeout: float,
    ) -> None:
        self.discord = discord
        self.watch = watch
        self.show = show
        self.answer_timeout = answer_timeout
        # Long enough for the bot to have decided and started (its burst window, then typing).
        self.quiet_seconds = config.triggers.burst_window_seconds + 1.5
        self.said: list[Said] = []
        self.names = {BOT_ID: BOT_NAME} | {uid: nick for uid, nick in MEMBERS.values()}

    async def play(self) -> list[Said]:
        """The lines said, up to the first answer that failed (the rest would fail alike)."""
        for line in SCENE:
            said = await self.say(line)
            if said.error is not None:
                break
        return self.said

    async def say(self, line: Line) -> Said:
        user_id, nickname = MEMBERS[line.member]
        typing_before = len(self._typing())
        message = await self.discord.user_says(CHANNEL_ID, user_id, line.text.format(bot=MENTION))
        said = Said(nickname, shown(message["content"], self.names), int(message["id"]))
        said.bot_had_spoken = any(earlier.answer_ids for earlier in self.said)
        self.said.append(said)
        if await self._answering(typing_before, addressed="{bot}" in line.text):
            try:
                result = await asyncio.wait_for(self.watch.done.get(), self.answer_timeout)
            except TimeoutError:
                said.error = f"no answer within {self.answer_timeout:.0f} s"
                self.show(said)
                return said
            said.answer_ids = list(result.posted_ids)
            said.answer = "\n".join(
                shown(self.discord.message(CHANNEL_ID, posted)["content"], self.names)
                for posted in result.posted_ids
            )
            said.followed = result.trigger.followed
            if result.ending.outcome != "success":
                said.error = result.ending.error or result.ending.outcome
        self.show(said)
        return said

    async def _answering(self, typing_before: int, *, addressed: bool) -> bool:
        """Whether the bot started answering the line just said: it shows "typing…" as it
        starts. Before it has spoken, only a mention can start an answer, so no wait then."""
        if not addressed and not self.said[-1].bot_had_spoken:
            return False
        try:
            await self.discord.wait_for_request(
                "POST",
                f"/channels/{CHANNEL_ID}/typing",
                count=typing_before + 1,
                timeout=self.quiet_seconds,
            )
        except TimeoutError:
            return False
        return True

    async def catchup(self, member: str, wait_seconds: float) -> str:
        """``member`` runs ``/catchup``: what the bot shows them (only them, by default)."""
        user_id, _ = MEMBERS[member]
        record = await self.discord.invoke_command(CHANNEL_ID, user_id, "catchup")
        shown_to = await self.discord.wait_for_interaction_messages(record, 1, timeout=wait_seconds)
        return "\n\n".join(shown(m["content"], self.names) for m in shown_to)

    def _typing(self) -> list[object]:
        return self.discord.requests_to("POST", f"/channels/{CHANNEL_ID}/typing")


@contextlib.asynccontextmanager
async def running_client(
    config: Config, discord: FakeDiscord, watch: AnswerWatch, store: Store
) -> AsyncIterator[ThreadwiseClient]:
    """The real client, logged in to the stand-in Discord and ready; closed on the way out."""
    async with ModelClient(config.model) as model:
        client = ThreadwiseClient(config, articles=None, model=model, recorder=watch, store=store)
        async with discord.running(client, ready_timeout=15) as ready:
            yield ready
