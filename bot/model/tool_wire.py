"""Tools on the wire: how each provider is offered tools, and how the calls it asks for are
read from its answer, whole or streamed, into the ``Call``.

Kept apart from the providers' own modules so that each provider gains one line per place it
reads an answer. OpenAI streams a call as ``delta.tool_calls`` pieces keyed by ``index`` (the
id and name in the first, the arguments' JSON text in pieces); Anthropic as a ``tool_use``
content block whose input arrives as ``input_json_delta`` pieces. Either way the arguments are
kept as the text that came, so the record holds exactly what the model wrote.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bot.model.call import Call
from bot.model.provider import as_dict
from bot.tools.spec import ToolCallRequest, ToolSpec, parse_arguments


def tool_fields(
    provider: str, tools: Sequence[ToolSpec], final: bool, bare: bool = False
) -> dict[str, Any]:
    """The request fields offering ``tools``; ``final``: offered but not to be called (the
    last round must answer; the tools stay declared, as the earlier calls in the messages
    need); ``bare``: not offered at all where the format allows it (OpenAI's: for a model
    that called tools although told not to), else as ``final`` (Anthropic refuses a request
    whose messages hold calls without the tools declared, and keeps to ``tool_choice``)."""
    if not tools or (bare and provider != "anthropic"):
        return {}
    if provider == "anthropic":
        offered = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ]
        return {"tools": offered} | ({"tool_choice": {"type": "none"}} if final or bare else {})
    return {"tools": [t.openai() for t in tools]} | ({"tool_choice": "none"} if final else {})


ERROR_RESULT = "<tool_error "  # how the toolbox marks a failed call's result


def mark_anthropic_errors(turns: list[dict[str, Any]]) -> None:
    """Anthropic's ``is_error`` on the results of failed calls (OpenAI has no such flag: the
    ``<tool_error>`` element says it to both)."""
    for turn in turns:
        for block in turn.get("content") or ():
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_result"
                and isinstance(block.get("content"), str)
                and block["content"].startswith(ERROR_RESULT)
            ):
                block["is_error"] = True


def read_openai_calls(message: dict[str, Any], call: Call) -> None:
    """``tool_calls`` of an OpenAI message or stream delta."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return
    for position, item in enumerate(calls):
        item = as_dict(item)
        index = item.get("index", position)
        function = as_dict(item.get("function"))
        part = call.tool_parts.setdefault(index if isinstance(index, int) else position,
                                          ["", "", []])  # fmt: skip
        if isinstance(item.get("id"), str) and item["id"]:
            part[0] = item["id"]
        if isinstance(function.get("name"), str) and function["name"]:
            part[1] = function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            part[2].append(arguments)


def read_anthropic_block(index: object, block: dict[str, Any], call: Call) -> None:
    """A ``tool_use`` content block (its start, or a whole answer's block)."""
    if block.get("type") != "tool_use":
        return
    key = index if isinstance(index, int) else len(call.tool_parts)
    part = call.tool_parts.setdefault(key, ["", "", []])
    part[0], part[1] = str(block.get("id", "")), str(block.get("name", ""))
    given = block.get("input")
    if isinstance(given, dict) and given:  # whole answers; a stream starts with {}
        part[2].append(json.dumps(given, ensure_ascii=False))


def read_anthropic_delta(index: object, delta: dict[str, Any], call: Call) -> None:
    if delta.get("type") == "input_json_delta" and isinstance(index, int):
        part = call.tool_parts.get(index)
        if part is not None and isinstance(delta.get("partial_json"), str):
            part[2].append(delta["partial_json"])


def anthropic_safe(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The messages with each call whose arguments are not a JSON object sent as ``{}``:
    Anthropic takes a ``tool_use`` input only as an object. The record keeps the text the
    model wrote; the model read an error result for that call."""
    safe: list[Mapping[str, Any]] = []
    for message in messages:
        calls = message.get("tool_calls")
        if isinstance(calls, list) and any(_bad_call(c) for c in calls):
            fixed = [_emptied(c) if _bad_call(c) else c for c in calls]
            message = {**message, "tool_calls": fixed}
        safe.append(message)
    return safe


def _bad_call(call: object) -> bool:
    arguments = as_dict(as_dict(call).get("function")).get("arguments")
    return isinstance(arguments, str) and parse_arguments(arguments) is None


def _emptied(call: dict[str, Any]) -> dict[str, Any]:
    return {**call, "function": {**call["function"], "arguments": "{}"}}


def tool_calls(call: Call) -> tuple[ToolCallRequest, ...]:
    """The calls the answer asked for, in order; a call without a name is no call."""
    found = []
    for number, (_, (call_id, name, pieces)) in enumerate(sorted(call.tool_parts.items())):
        if name:
            arguments = "".join(pieces) or "{}"
            found.append(
                ToolCallRequest(id=call_id or f"call_{number}", name=name, arguments=arguments)
            )
    return tuple(found)
