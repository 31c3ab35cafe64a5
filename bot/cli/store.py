"""The CLI's storage commands: export, explain, forget-user.

Each returns an exit code; operator mistakes (a bad date, an unknown message id, a database
from a newer version) raise ``CommandError`` or ``StoreError``, which ``bot.cli.main`` prints as
one line instead of a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from bot.config.schema import Config
from bot.errors import CommandError
from bot.storage import Store, render_text


def open_existing(config: Config) -> Store:
    """The existing store; reading commands must not create an empty one by accident."""
    if config.storage.url is not None:
        return Store.open_url(config.storage.url_text or "")
    if not config.storage.path.exists():
        raise CommandError(
            f"{config.storage.path}: no store there yet ([storage] path; the bot creates it "
            "when it first runs)"
        )
    return Store.open(config.storage.path)


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        day = datetime.strptime(text, "%Y-%m-%d")
    except ValueError as error:
        raise CommandError(f"--since: expected a date like 2024-05-31, got {text!r}") from error
    return day.replace(tzinfo=UTC)


def export_command(args: argparse.Namespace, config: Config) -> int:
    """Write one JSONL line per successful interaction to ``--out`` or stdout."""
    since = _since(args.since)
    out: Path | None = args.out
    if out is not None and (out.is_dir() or not out.name):
        raise CommandError(f"--out {out}: is a folder; name the file to write, e.g. {out}/x.jsonl")
    with open_existing(config) as store:
        lines = store.export_lines(since=since, channel_id=args.channel)
        if out is None:
            count = _write(lines, sys.stdout)
            sys.stdout.flush()
        else:
            # Write beside the target and rename, so a failed export never leaves half a file.
            partial = out.with_name(out.name + ".partial")
            try:
                with partial.open("w", encoding="utf-8") as handle:
                    count = _write(lines, handle)
                partial.replace(out)
            except OSError as error:
                partial.unlink(missing_ok=True)
                raise CommandError(f"{out}: cannot write: {error.strerror}") from error
    print(f"exported {counted(count, 'interaction')}", file=sys.stderr)
    return 0


def _write(lines: Iterable[str], handle: TextIO) -> int:
    count = 0
    for line in lines:
        handle.write(line + "\n")
        count += 1
    return count


def explain_command(args: argparse.Namespace, config: Config) -> int:
    with open_existing(config) as store:
        explanation = store.explain(args.message_id)
    print(render_text(explanation))
    return 0


def forget_user_command(args: argparse.Namespace, config: Config) -> int:
    with open_existing(config) as store:
        result = asyncio.run(store.forget_user(args.user_id))
        where = store.location  # the file, or the server's URL without its password
    if not (result.context_messages or result.versions or result.interactions_emptied):
        print(f"user {args.user_id}: nothing of theirs left in {where}; unchanged")
        return 0
    print(
        f"user {args.user_id}: {counted(result.context_messages, 'context message')} and "
        f"{counted(result.versions, 'message version')} redacted, "
        f"{counted(result.interactions_emptied, 'interaction')} emptied; "
        f"{where} rewritten without them"
    )
    return 0


def counted(number: int, thing: str) -> str:
    """The count with its noun agreeing: 1 interaction, 2 interactions, 0 interactions."""
    return f"{number} {thing}{'' if number == 1 else 's'}"
