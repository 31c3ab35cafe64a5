"""``python -m bot``: run the bot, replay channel logs, inspect and export what it did.

Every subcommand takes ``--config PATH`` (default: ``$THREADWISE_CONFIG``, else ``./config.toml``).
Operator mistakes (a broken config, a missing log, an unknown message id) end with one clear line
on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

from bot.cli import demo, follow
from bot.config.export_settings import settings_for_export
from bot.config.schema import Config, ConfigError, load_config, locate_config
from bot.config.validators import snowflake
from bot.errors import CommandError, StoreError
from conversation.replay import ExportError
from conversation.selection import WeightsError

EXIT_USAGE = 2
EXIT_DOWN = 1
EXIT_CODES = """exit codes:
  0    done (run: stopped by SIGTERM or Ctrl-C)
  1    replay: the model did not answer (the prompt was printed; --no-model skips the model);
       demo: the bot did not answer the mention;
       check-config --probe: a model endpoint or MCP server is down
  2    an operator mistake: bad config, missing file, unknown id (one line on stderr)
  3    run: Discord refused the bot (token, Message Content intent) or cannot be reached
  130  interrupted"""


def _config_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="PATH",
        help="configuration file (default: $THREADWISE_CONFIG, else ./config.toml, else "
        "built-in defaults)",
    )
    return parent


WARM_HELP = (
    "build as a bot that saw the log's messages arrive does (its cache holds them: no REST "
    "call, the walk back reaching [context] cached_candidate_window), not from a cold cache"
)


def build_parser() -> argparse.ArgumentParser:
    common = _config_parent()
    parser = argparse.ArgumentParser(
        prog="python -m bot",
        description="threadwise: a Discord bot that answers with any LLM and understands which "
        "messages a reply is about.",
        epilog="Start with: python -m bot replay --no-model examples/support-channel.json\n\n"
        + EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"threadwise {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", parents=[common], help="run the Discord bot")
    run.set_defaults(handler=_run, calls_model=True)

    replay = commands.add_parser(
        "replay",
        parents=[common],
        help="show what the bot would send the model for a message of a channel log",
        description="Build and materialize the context of one message of a DiscordChatExporter "
        "JSON log, and print exactly what the model would be sent, with why each message was "
        "chosen. If [model] points at a reachable endpoint, its answer is printed too.",
    )
    replay.add_argument("log", type=Path, help="DiscordChatExporter JSON export")
    replay.add_argument("--trigger", type=snowflake, help="message id (default: the last one)")
    replay.add_argument("--format", choices=("text", "json"), default="text")
    replay.add_argument(
        "--no-model", action="store_true", help="do not ask the model, only show the prompt"
    )
    replay.add_argument("--warm", action="store_true", help=WARM_HELP)
    replay.set_defaults(handler=_replay, calls_model=True)

    contexts = commands.add_parser(
        "contexts",
        parents=[common],
        help="context selection for many triggers of a log, as JSON lines",
        description="One JSON line per trigger: {trigger, context, reasons, rest_calls, scores} "
        "(and prompt, with --prompts); rest_calls is what the build would cost against Discord "
        "with a cold cache (or --warm), scores each message's learned relevance score and its "
        "evidence.",
    )
    contexts.add_argument("log", type=Path, help="DiscordChatExporter JSON export")
    contexts.add_argument(
        "--triggers", type=Path, help="file of message ids, one per line (default: every message)"
    )
    contexts.add_argument(
        "--prompts",
        action="store_true",
        help='each line also holds "prompt": the messages exactly as they would be sent (as '
        "replay --format json shows them), each trigger counted as answered by the bot in order: "
        "one that continues an earlier one's conversation starts with that one's request",
    )
    contexts.add_argument("--warm", action="store_true", help=WARM_HELP)
    contexts.set_defaults(handler=_contexts)

    export = commands.add_parser(
        "export", parents=[common], help="write training data (OpenAI chat JSONL)"
    )
    export.add_argument("--since", help="only interactions from this date on (YYYY-MM-DD)")
    export.add_argument("--channel", type=snowflake, help="only this channel id")
    export.add_argument("--out", type=Path, help="output file (default: stdout)")
    export.set_defaults(handler=_export)

    explain = commands.add_parser(
        "explain", parents=[common], help="show which messages an answer used, and why"
    )
    explain.add_argument("message_id", type=snowflake, help="the bot's answer or its trigger")
    explain.set_defaults(handler=_explain)

    forget = commands.add_parser(
        "forget-user", parents=[common], help="remove a person's content from the store"
    )
    forget.add_argument("user_id", type=snowflake)
    forget.set_defaults(handler=_forget_user)

    check = commands.add_parser(
        "check-config",
        parents=[common],
        help="validate the config and print it, secrets masked",
        description="Check the config, report every problem at once, and print the effective "
        "settings as TOML (secrets masked). A [models.NAME] key variable that is not set is a "
        "warning here (only the commands that call that model need it).",
    )
    check.add_argument(
        "--probe",
        action="store_true",
        help="also try each model endpoint and MCP server; exit 1 when one is down",
    )
    check.set_defaults(handler=_check_config)

    studio = commands.add_parser(
        "studio",
        parents=[common],
        help="a local web page to see and tune contexts, and browse what the bot recorded",
        description="Serve a web page over a DiscordChatExporter JSON log (its timeline, any "
        "message's context drawn as a graph, a control for every [context] setting, and gold "
        "scores when a .gold.json lies beside the log) and, with --store, over the recorded "
        "interactions. Open the printed address; ?trigger=ID picks a message.",
    )
    studio.add_argument("log", type=Path, nargs="?", help="DiscordChatExporter JSON export")
    studio.add_argument("--store", action="store_true", help="browse the [storage] store too")
    studio.add_argument(
        "--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)"
    )
    studio.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    studio.set_defaults(handler=_studio)
    follow.add_parser(commands, common)
    demo.add_parser(commands, common)
    return parser


def _version() -> str:
    try:
        return metadata.version("threadwise")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    _tolerant_output()
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace, Config], int] = args.handler
    try:
        config = load_config(args.config, model_keys_required=_calls_model(args))
        source = locate_config(args.config)
        if not source.exists and args.command not in ("check-config", "demo"):
            # Said once, so that nobody runs on defaults (and a store in ./data) unknowingly.
            print(
                f"note: no {source.path} here: using built-in defaults; "
                f"store: {config.storage.path}",
                file=sys.stderr,
            )
        return handler(args, config)
    except ConfigError as error:
        for line in error.lines:
            print(f"error: {line}", file=sys.stderr)
        return EXIT_USAGE
    except (ExportError, CommandError, StoreError, WeightsError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into head(1) and the like
        sys.stderr.close()
        return 0


def _calls_model(args: argparse.Namespace) -> bool:
    """Whether the command asks a model, and so needs its key variables set (``explain``,
    ``follow``, ``studio`` and ``replay --no-model`` never do)."""
    return bool(getattr(args, "calls_model", False)) and not getattr(args, "no_model", False)


def _tolerant_output() -> None:
    """Text that cannot be encoded (a file name with undecodable bytes, which Python keeps as
    lone surrogates) is printed escaped, instead of ending the command with a traceback."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


# ---------------------------------------------------------------------------- handlers


def _check_config(args: argparse.Namespace, config: Config) -> int:
    from bot.cli.tools_report import tool_report
    from bot.config.report import render_config
    from bot.config.schema import unset_key_variables

    for line in unset_key_variables(config, args.config):
        print(f"warning: {line}", file=sys.stderr)
    sys.stdout.write(render_config(config, locate_config(args.config)))
    tools = tool_report(
        config.tools,
        articles_on=config.articles.enabled,
        catch_up=config.catchup.enabled and config.catchup.tool,
        start_servers=args.probe,
    )
    sys.stdout.write("".join(f"{line}\n" for line in tools.lines))
    if not args.probe:
        return 0
    from bot.cli.probe import probe_lines

    lines, all_up = probe_lines(config, tools.down)
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    return 0 if all_up else EXIT_DOWN


def _contexts(args: argparse.Namespace, config: Config) -> int:
    from conversation.replay import LogSource, select_contexts

    source = LogSource.from_file(args.log)
    config = settings_for_export(config, source.export)  # the channel's own table, as replay
    triggers = _read_ids(args.triggers) if args.triggers else None
    if triggers is not None:
        missing = [t for t in triggers if source.message(t) is None]
        if missing:
            raise CommandError(f"{args.triggers}: message {missing[0]} is not in {args.log}")

    async def emit() -> None:
        async for selection in select_contexts(source, config.context, triggers, warm=args.warm):
            report = selection.report()
            sys.stdout.write(report.model_dump_json(exclude={"problems"}) + "\n")

    async def emit_prompts() -> None:
        from bot.cli.replay import log_prompts, offline_pages

        wanted = [source.message(t) for t in triggers] if triggers else source.messages
        pages = offline_pages(args.log)
        async for prepared in log_prompts(
            source, wanted, config, pages, warm=args.warm, answered=True
        ):
            report = prepared.selection.report().model_dump(mode="json", exclude={"problems"})
            report["prompt"] = prepared.request_messages
            sys.stdout.write(json.dumps(report, ensure_ascii=False, separators=(",", ":")) + "\n")

    asyncio.run(emit_prompts() if args.prompts else emit())
    return 0


def _read_ids(path: Path) -> list[int]:
    try:
        lines = path.read_text(encoding="utf-8-sig").split()
    except OSError as error:
        raise CommandError(f"{path}: cannot read: {error.strerror}") from error
    except UnicodeDecodeError as error:
        raise CommandError(
            f"{path}: not UTF-8 text (at byte {error.start}); expected one message id per line"
        ) from error
    try:
        return [snowflake(line) for line in lines]
    except argparse.ArgumentTypeError as error:
        raise CommandError(f"{path}: expected one message id per line ({error})") from error


def _replay(args: argparse.Namespace, config: Config) -> int:
    from bot.cli.replay import replay

    return replay(args, config)


def _run(args: argparse.Namespace, config: Config) -> int:
    from bot.serve.run import run_bot

    return run_bot(config, config_path=args.config)


def _studio(args: argparse.Namespace, config: Config) -> int:
    from bot.cli.studio import studio_command

    return studio_command(args, config)


def _export(args: argparse.Namespace, config: Config) -> int:
    from bot.cli.store import export_command

    return export_command(args, config)


def _explain(args: argparse.Namespace, config: Config) -> int:
    from bot.cli.store import explain_command

    return explain_command(args, config)


def _forget_user(args: argparse.Namespace, config: Config) -> int:
    from bot.cli.store import forget_user_command

    return forget_user_command(args, config)
