"""``python -m bot demo``: see the bot work before giving it a token.

The real client, builder, follow decision and store run against the stand-in Discord and model of
``bot.demo`` on 127.0.0.1; the scene is printed as a transcript (ending with a member's
``/catchup``), then the explanation of the last answer as ``explain`` prints it. The answers are
kept in a folder of their own (``--dir``, with a ``config.toml`` naming the store), so ``explain``
and ``studio --store`` open them afterwards and the operator's own store is never touched.

From the operator's config the demo takes what shapes the answers ([context], [triggers],
[replies], [mentions], [attachments], [cache]) and, with ``--model``, the top-level [model]
endpoint; never its Discord, storage, permissions, tools or article fetching (the demo reaches
nothing outside 127.0.0.1 but that model).
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from pathlib import Path
from typing import TextIO

from bot.cli.store import counted
from bot.config.channels import top_level
from bot.config.model_settings import ModelSettings
from bot.config.schema import ArticleSettings, Config, DiscordSettings, StorageSettings
from bot.demo.scene import (
    BOT_NAME,
    CATCHUP_MEMBER,
    CHANNEL_NAME,
    MEMBERS,
    AnswerWatch,
    Said,
    Scene,
    running_client,
    stand_in_discord,
    stand_in_model,
)
from bot.errors import CommandError
from bot.storage import Store, render_text

DEFAULT_DIR = Path("threadwise-demo")
CONFIG_HEADER = "# Written by `python -m bot demo`: its store, for explain and studio --store.\n"
EXIT_NO_ANSWER = 1


def add_parser(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    demo = commands.add_parser(
        "demo",
        parents=[common],
        help="see the bot work with no token: a short scene against a local stand-in Discord",
        description="Run the real bot against a stand-in Discord and a stand-in model on "
        "127.0.0.1 (no token, no model server, nothing from the internet) and print a short "
        "scene as a transcript: a mention answered, a follow-up answered without one, a "
        "neighbouring conversation left alone, then why the last answer was what it was. "
        "The answers are kept in --dir for explain and studio --store.",
    )
    demo.add_argument(
        "--dir",
        type=Path,
        default=DEFAULT_DIR,
        metavar="DIR",
        help=f"where the demo's store and its config.toml go (default ./{DEFAULT_DIR})",
    )
    demo.add_argument(
        "--model",
        action="store_true",
        help="answer with the configured [model] endpoint instead of the stand-in model",
    )
    demo.set_defaults(handler=demo_command)


def demo_command(args: argparse.Namespace, config: Config) -> int:
    folder: Path = args.dir
    config_file = prepare_folder(folder)
    store_path = (folder / "store.sqlite3").resolve()
    out = sys.stdout
    said = asyncio.run(play(config, store_path, use_model=args.model, out=out))
    answered = [line for line in said if line.answer_ids and line.error is None]
    failed = next((line.error for line in said if line.error is not None), None)
    if failed is not None or not answered:
        why = failed or "it never started answering the mention"
        print(f"error: the bot did not answer: {why}", file=sys.stderr)
        return EXIT_NO_ANSWER
    last = answered[-1]
    with Store.open(store_path) as store:
        explanation = store.explain(last.answer_ids[0])
    print_explanation(out, render_text(explanation), last.answer_ids[0])
    print_where(out, config_file, last.answer_ids[0], len(answered))
    return 0


def prepare_folder(folder: Path) -> Path:
    """The demo folder with its ``config.toml`` (written unless the demo wrote it before);
    a ``config.toml`` of someone else's there is never overwritten."""
    config_file = folder / "config.toml"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if config_file.exists():
            if not config_file.read_text(encoding="utf-8").startswith(CONFIG_HEADER):
                raise CommandError(
                    f"{config_file}: not written by the demo; give the demo a folder of its own "
                    "(--dir DIR)"
                )
        else:
            config_file.write_text(
                CONFIG_HEADER + '[storage]\npath = "store.sqlite3"\n', encoding="utf-8"
            )
    except OSError as error:
        raise CommandError(f"{folder}: cannot write the demo's store there: {error}") from error
    except UnicodeDecodeError as error:
        raise CommandError(f"{config_file}: not written by the demo (not UTF-8)") from error
    return config_file


def demo_config(
    config: Config, *, api_base: str, token: str, model: ModelSettings, store: Path
) -> Config:
    """The config the demo's bot runs with; see the module docstring for what comes from
    the operator's."""
    return Config(
        discord=DiscordSettings.model_validate(
            {"token": token, "api_base": api_base, "guild_ready_timeout": 0.5}
        ),
        model=model,
        context=config.context,
        triggers=config.triggers,
        replies=config.replies,
        mentions=config.mentions,
        attachments=config.attachments,
        cache=config.cache,
        articles=ArticleSettings.model_validate({"enabled": False}),
        storage=StorageSettings.model_validate({"path": str(store)}),
    )


async def play(config: Config, store_path: Path, *, use_model: bool, out: TextIO) -> list[Said]:
    async with stand_in_discord() as discord, stand_in_model() as stand_in:
        model = (
            top_level(config).model
            if use_model
            else ModelSettings.model_validate({"base_url": stand_in.url, "name": "stand-in"})
        )
        demo = demo_config(
            config, api_base=discord.api_base, token=discord.token, model=model, store=store_path
        )
        print_header(out, model.base_url if use_model else None)
        with Store.open(store_path) as store:
            watch = AnswerWatch(store)
            with discord.nextcord_pointed_here():
                async with running_client(demo, discord, watch, store):
                    scene = Scene(
                        discord,
                        watch,
                        demo,
                        lambda said: print_line(out, said),
                        answer_timeout=demo.model.timeout_seconds + 30,
                    )
                    said = await scene.play()
                    if all(line.error is None for line in said):
                        caught_up = await scene.catchup(
                            CATCHUP_MEMBER, wait_seconds=demo.model.timeout_seconds + 30
                        )
                        print_catchup(out, caught_up)
                    return said


def print_header(out: TextIO, model_url: object | None) -> None:
    model = (
        f"your [model] at {model_url}"
        if model_url is not None
        else "a stand-in model with canned answers (--model: your configured one)"
    )
    out.write(
        "threadwise demo: the real bot against a stand-in Discord on 127.0.0.1 and "
        f"{model}.\nNo token, nothing from the internet.\n\n#{CHANNEL_NAME}\n"
    )
    out.flush()


def print_line(out: TextIO, said: Said) -> None:
    out.write(f"  {said.author}: {said.text}\n")
    if said.error is not None:
        out.write(f"    {BOT_NAME} could not answer: {said.error}\n")
    elif said.answer is not None:
        why = said.followed or "answering the mention"  # "followed: no mention, ..."

        body = "\n      ".join(said.answer.splitlines())
        out.write(f"    {BOT_NAME} ({why}):\n      {body}\n")
    elif said.bot_had_spoken:
        out.write("    (left alone: not part of the bot's conversation)\n")
    out.flush()


def print_catchup(out: TextIO, text: str) -> None:
    name = MEMBERS[CATCHUP_MEMBER][1]
    body = "\n      ".join(text.splitlines())
    out.write(f"  {name}: /catchup\n    {BOT_NAME} (only {name} sees it):\n      {body}\n")
    out.flush()


def print_explanation(out: TextIO, text: str, answer_id: int) -> None:
    out.write(f"\nWhy the last answer was what it was (python -m bot explain {answer_id}):\n")
    out.write("".join(f"  {line}\n" for line in text.splitlines()))


def print_where(out: TextIO, config_file: Path, answer_id: int, answers: int) -> None:
    config = shlex.quote(str(config_file))
    out.write(
        f"\nThe demo's {counted(answers, 'answer')} are stored in "
        f"{config_file.parent / 'store.sqlite3'}. Open them again with:\n"
        f"  python -m bot explain {answer_id} --config {config}\n"
        f"  python -m bot studio --store --config {config}\n"
    )
