"""Translation between ``MessageNode`` sequences and what providers accept.

Two families are covered, each lossless where the provider's format has room for the information:

**OpenAI-compatible chat** (``to_openai`` / ``from_openai``): one dict per node with ``role``,
``content``, ``name``, ``tool_calls`` and ``tool_call_id``. Content is a string, or a parts list
(``text`` then ``image_url`` parts) when the node has images. Lost on the way out: ``user_id``,
``message_id``, ``created_at`` and ``metadata`` (the format has no place for them), a display name
that is not a valid OpenAI name (it is sanitized; the readable name belongs in the content, which
is the materializer's job) and the name of a tool message (tool messages carry none). Read back:
several text parts join with a newline, and an assistant's ``content: null`` becomes ``""``.

**Anthropic messages** (``to_anthropic`` / ``from_anthropic``): the system prompt travels apart,
user and tool messages become ``user`` turns, consecutive same-role turns are merged into one turn
of content blocks, and a speaker's name is carried in the text as ``[name] text``. Per node the
blocks are: images first (Anthropic's advice), then the text, then ``tool_use`` blocks; a tool
message is one ``tool_result`` block. Lost on top of what OpenAI loses: several system messages
become one (joined by a blank line, their position in the conversation is not kept), a user or
assistant node with nothing to show (no text, name, images or tool calls) has no block at all, a
name with brackets or a line break cannot be read back, text that itself begins with
``[something] `` reads back as a name, an assistant node with no text merged after another
assistant node gives its tool calls to that node, and tool-call arguments round-trip as JSON
values (re-serialized) rather than as the exact text. A tool result's ``is_error`` is kept as
``metadata["tool_error"]`` (OpenAI has no place for it). Not read at all:
``cache_control`` on blocks and the ``detail`` of an OpenAI image part (hints, not content).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from conversation.graph.node import MessageFormatError, MessageNode, ToolCall

OPENAI_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # used with fullmatch: "$" allows a "\n"
OPENAI_FIELDS: tuple[str, ...] = ("role", "content", "name", "images", "tool_call_id", "tool_calls")
ANTHROPIC_FIELDS = OPENAI_FIELDS

# Anthropic's ``is_error`` on a tool result has no field of its own in a node; it is kept here.
TOOL_ERROR_KEY = "tool_error"

_OPENAI_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
_NAME_IN_TEXT = re.compile(r"\[([^\[\]\n]+)\] (.*)", re.DOTALL)
_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.DOTALL)


# --- OpenAI -----------------------------------------------------------------------------------


def openai_name(name: str | None, user_id: str | None = None) -> str | None:
    """The name as OpenAI accepts it (``^[A-Za-z0-9_-]{1,64}$``), or ``None`` if nothing is left.

    A valid name is kept as it is. Otherwise accents are folded to ASCII, other runs of characters
    become ``_``; a name with nothing usable (e.g. all CJK) falls back to ``user_<user_id>``.
    """
    if name is None:
        return None
    if OPENAI_NAME.fullmatch(name):
        return name
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", ascii_name).strip("_")[:64]
    if not cleaned and user_id:
        cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", f"user_{user_id}")[:64]
    return cleaned or None


def node_to_openai(node: MessageNode) -> dict[str, Any]:
    """One node as an OpenAI chat message (see the module docstring for what is left out)."""
    content: Any = node.content
    if node.images:
        parts: list[dict[str, Any]] = (
            [{"type": "text", "text": node.content}] if node.content else []
        )
        parts.extend({"type": "image_url", "image_url": {"url": url}} for url in node.images)
        content = parts
    elif node.tool_calls and not node.content:
        content = None  # OpenAI's own form for a turn that only calls tools
    message: dict[str, Any] = {"role": node.role, "content": content}
    if node.role != "tool":
        name = openai_name(node.name, node.user_id)
        if name is not None:
            message["name"] = name
    if node.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in node.tool_calls
        ]
    if node.tool_call_id is not None:
        message["tool_call_id"] = node.tool_call_id
    return message


def to_openai(nodes: Iterable[MessageNode]) -> list[dict[str, Any]]:
    """The nodes as an OpenAI chat ``messages`` list."""
    return [node_to_openai(node) for node in nodes]


def node_from_openai(message: Mapping[str, Any]) -> MessageNode:
    """One OpenAI chat message as a node.

    ``developer`` is read as ``system``. Keys the node cannot hold are refused unless empty
    (``refusal: None``, ``annotations: []`` in API responses), so nothing is dropped silently.
    """
    if not isinstance(message, Mapping):
        raise MessageFormatError(f"an OpenAI message must be a mapping, got {message!r}")
    extra = [key for key, value in message.items() if key not in _OPENAI_KEYS and value]
    if extra:
        raise MessageFormatError(f"OpenAI message has fields a node cannot hold: {extra}")
    role = message.get("role")
    if role == "developer":
        role = "system"
    data: dict[str, Any] = {"role": role}
    content = message.get("content")
    if content is None or isinstance(content, str):
        data["content"] = content or ""
    elif isinstance(content, Sequence):
        texts, images = _openai_parts(content)
        data["content"] = "\n".join(texts)
        if images:
            data["images"] = images
    else:
        raise MessageFormatError(f"OpenAI content must be text or a parts list, got {content!r}")
    if message.get("name"):
        data["name"] = message["name"]
    if message.get("tool_call_id") is not None:
        data["tool_call_id"] = message["tool_call_id"]
    if message.get("tool_calls"):
        data["tool_calls"] = [_openai_tool_call(call) for call in message["tool_calls"]]
    return MessageNode.from_dict(data)


def from_openai(messages: Iterable[Mapping[str, Any]]) -> list[MessageNode]:
    """An OpenAI chat ``messages`` list as nodes (inverse of ``to_openai`` where lossless)."""
    return [node_from_openai(message) for message in messages]


def _openai_parts(parts: Sequence[Any]) -> tuple[list[str], list[str]]:
    texts: list[str] = []
    images: list[str] = []
    for part in parts:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            texts.append(part["text"])
        elif kind == "image_url":
            image = part["image_url"]
            images.append(image["url"] if isinstance(image, Mapping) else image)
        else:
            raise MessageFormatError(f"unsupported OpenAI content part: {part!r}")
    return texts, images


def _openai_tool_call(call: Mapping[str, Any]) -> dict[str, Any]:
    if call.get("type", "function") != "function" or "function" not in call:
        raise MessageFormatError(f"unsupported OpenAI tool call: {call!r}")
    function = call["function"]
    return {"id": call["id"], "name": function["name"], "arguments": function.get("arguments", "")}


# --- Anthropic --------------------------------------------------------------------------------


def to_anthropic(nodes: Iterable[MessageNode]) -> tuple[str, list[dict[str, Any]]]:
    """``(system, messages)`` for Anthropic's messages API (see the module docstring)."""
    system, turns, _ = to_anthropic_upto(nodes, 0)
    return system, turns


def to_anthropic_upto(
    nodes: Iterable[MessageNode], upto: int
) -> tuple[str, list[dict[str, Any]], int]:
    """``to_anthropic``, and how many content blocks the first ``upto`` nodes give: merging
    only appends, so those are the first blocks of the turns (a prompt-cache breakpoint after
    those nodes goes on the last of them), found without translating the start again."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    count = seen = 0
    upto_blocks: int | None = None
    for node in nodes:
        if seen == upto:
            upto_blocks = count
        seen += 1
        if node.role == "system":
            system.append(_named_text(node))
            continue
        blocks = _anthropic_blocks(node)
        count += len(blocks)
        if not blocks:
            continue
        role = "assistant" if node.role == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return "\n\n".join(system), turns, count if upto_blocks is None else upto_blocks


def from_anthropic(
    system: str | Sequence[Mapping[str, Any]] | None, messages: Iterable[Mapping[str, Any]]
) -> list[MessageNode]:
    """Nodes from Anthropic's ``system`` and ``messages`` (inverse of ``to_anthropic``)."""
    nodes: list[MessageNode] = []
    system_text = _anthropic_system(system)
    if system_text:
        nodes.append(_node_from_text("system", system_text, []))
    for message in messages:
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise MessageFormatError(f"Anthropic roles are user and assistant, got {role!r}")
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, Sequence):
            raise MessageFormatError(f"Anthropic content must be text or blocks: {content!r}")
        nodes.extend(_nodes_from_turn(role, blocks))
    return nodes


def _named_text(node: MessageNode) -> str:
    return f"[{node.name}] {node.content}" if node.name else node.content


def _anthropic_blocks(node: MessageNode) -> list[dict[str, Any]]:
    if node.role == "tool":
        block = {"type": "tool_result", "tool_use_id": node.tool_call_id, "content": node.content}
        if node.metadata.get(TOOL_ERROR_KEY) is True:
            block["is_error"] = True
        return [block]
    blocks = [{"type": "image", "source": _image_source(url)} for url in node.images]
    text = _named_text(node)
    if text:
        blocks.append({"type": "text", "text": text})
    for call in node.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call)})
    return blocks


def _input(call: ToolCall) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as exc:
        raise MessageFormatError(f"tool call {call.id} arguments are not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise MessageFormatError(
            f"tool call {call.id} arguments must be a JSON object for Anthropic"
        )
    return value


def _image_source(url: str) -> dict[str, Any]:
    data_url = _DATA_URL.fullmatch(url)
    if data_url:
        return {"type": "base64", "media_type": data_url[1], "data": data_url[2]}
    return {"type": "url", "url": url}


def _image_url(source: Mapping[str, Any]) -> str:
    if source.get("type") == "url":
        return source["url"]
    if source.get("type") == "base64":
        return f"data:{source['media_type']};base64,{source['data']}"
    raise MessageFormatError(f"unsupported Anthropic image source: {source!r}")


def _anthropic_system(system: str | Sequence[Mapping[str, Any]] | None) -> str:
    if system is None or isinstance(system, str):
        return system or ""
    texts = []
    for block in system:
        if block.get("type") != "text":
            raise MessageFormatError(f"Anthropic system blocks must be text: {block!r}")
        texts.append(block["text"])
    return "\n\n".join(texts)


def _node_from_text(role: str, text: str, images: list[str]) -> MessageNode:
    data: dict[str, Any] = {"role": role, "content": text}
    named = _NAME_IN_TEXT.fullmatch(text)
    if named:
        data["name"], data["content"] = named[1], named[2]
    if images:
        data["images"] = images
    return MessageNode.from_dict(data)


def _nodes_from_turn(role: str, blocks: Sequence[Any]) -> list[MessageNode]:
    nodes: list[MessageNode] = []
    images: list[str] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "image":
            images.append(_image_url(block["source"]))
        elif kind == "text":
            nodes.append(_node_from_text(role, block["text"], images))
            images = []
        elif kind == "tool_use" and role == "assistant":
            call = ToolCall(
                id=block["id"],
                name=block["name"],
                arguments=json.dumps(block.get("input", {}), ensure_ascii=False),
            )
            if nodes and nodes[-1].role == "assistant":
                nodes[-1] = nodes[-1].model_copy(
                    update={"tool_calls": (*nodes[-1].tool_calls, call)}
                )
            else:
                nodes.append(MessageNode(role="assistant", content="", tool_calls=(call,)))
        elif kind == "tool_result" and role == "user":
            nodes.append(
                MessageNode(
                    role="tool",
                    content=_tool_result_text(block.get("content", "")),
                    tool_call_id=block["tool_use_id"],
                    metadata={TOOL_ERROR_KEY: True} if block.get("is_error") else None,
                )
            )
        else:
            raise MessageFormatError(f"unsupported Anthropic {role} content block: {block!r}")
    if images:
        nodes.append(_node_from_text(role, "", images))
    return nodes


def _tool_result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for block in content:
        if not (isinstance(block, Mapping) and block.get("type") == "text"):
            raise MessageFormatError(f"only text tool results are supported, got {block!r}")
        texts.append(block["text"])
    return "\n".join(texts)
