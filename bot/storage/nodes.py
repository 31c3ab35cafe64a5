"""Content addressing of request messages, and their redaction for forget-user.

A node is one OpenAI chat message exactly as it was sent. Its JSON is stored compactly with the
caller's key order kept (so the export reproduces the message, not a re-sorted cousin of it) and
its address is the SHA-256 of that text: consecutive answers in a channel send mostly the same
messages, and each of them is stored once.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from bot.storage.models import REMOVED

# One encoder for all calls: json.dumps with options builds a new encoder each time, and this
# runs 30 times per recorded interaction.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def canonical_json(message: dict[str, Any]) -> str:
    """Compact, key order as given, non-ASCII kept: the exact text stored and exported."""
    return _ENCODER.encode(message)


def node_hash(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def redact_message(message: dict[str, Any]) -> dict[str, Any]:
    """The message with its text and images replaced and its name left out: only the role and
    shape remain. (OpenAI refuses a ``name`` that is not ``^[A-Za-z0-9_-]+$``, so the
    placeholder cannot stand there, and no name is the honest value.)"""
    redacted = {key: value for key, value in message.items() if key != "name"}
    if "content" in redacted:
        redacted["content"] = REMOVED
    return redacted


def excerpt(message: dict[str, Any], limit: int = 80) -> str:
    """A one-line preview of a message's text parts, for explanations."""
    content = message.get("content")
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, dict):
                parts.append(f"[{part.get('type', 'part')}]")
        content = " ".join(parts)
    text = " ".join(str(content or "").split())
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:  # what a tool-calling turn asked for, after its text
        asked = " ".join(
            f"→ {call['function'].get('name')}({call['function'].get('arguments', '')})"
            for call in calls
            if isinstance(call, dict) and isinstance(call.get("function"), dict)
        )
        text = f"{text} {asked}".strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def message_text(message: dict[str, Any]) -> str | None:
    """The text content of a message (for version 1 of a Discord message)."""
    content = message.get("content")
    if content is None or isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)
