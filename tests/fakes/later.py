"""The bundled support channel with one more question, asked after a long silence."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta

from conversation.sources.snowflakes import time_snowflake
from tests.fakes.harness import EXAMPLE


def asked_later(content: str, *, days: float = 3, replying_to: str | None = None) -> dict:
    """The export with Chloé asking the bot ``content`` ``days`` after the last message."""
    export = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    last = export["messages"][-1]
    question = copy.deepcopy(last)
    moment = datetime.fromisoformat(last["timestamp"]) + timedelta(days=days)
    question["id"] = str(time_snowflake(moment))
    question["timestamp"] = moment.isoformat()
    question["content"] = content
    question["mentions"] = [m for m in last["mentions"] if m["isBot"]]
    question.pop("reference", None)
    question["type"] = "Default"
    if replying_to is not None:
        question["type"] = "Reply"
        question["reference"] = {**last["reference"], "messageId": replying_to}
    export["messages"].append(question)
    export["messageCount"] = len(export["messages"])
    return export


def message_id(export: dict, starts_with: str) -> str:
    return next(m["id"] for m in export["messages"] if m["content"].startswith(starts_with))
