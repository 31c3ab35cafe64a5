"""MessageNode's dict form and the OpenAI / Anthropic translations, round-tripped."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conversation.graph.formats import (
    OPENAI_FIELDS,
    from_anthropic,
    from_openai,
    openai_name,
    to_anthropic,
    to_anthropic_upto,
    to_openai,
)
from conversation.graph.message_graph import MessageGraph
from conversation.graph.node import FrozenMap, MessageFormatError, MessageNode, ToolCall

# --- MessageNode ------------------------------------------------------------------------------


def test_from_dict_and_to_dict_round_trip_without_defaults() -> None:
    data = {
        "role": "user",
        "content": "hi",
        "name": "Zoë",
        "user_id": "80351110224678912",
        "message_id": "1100000000000000001",
        "created_at": datetime(2024, 5, 1, 12, tzinfo=UTC),
        "images": ["https://cdn.example/a.png"],
        "metadata": {"why": ["reply", {"depth": 2}], "score": 0.5},
    }
    node = MessageNode.from_dict(data)
    assert node.to_dict() == data
    assert MessageNode.from_dict({"role": "user", "content": ""}).to_dict() == {
        "role": "user",
        "content": "",
    }


def test_unknown_keys_are_named_in_the_error() -> None:
    with pytest.raises(MessageFormatError, match=r"'speaker'.*allowed: role, content, name"):
        MessageNode.from_dict({"role": "user", "content": "x", "speaker": "al"})


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"role": "narrator", "content": "x"}, "role"),
        ({"role": "user"}, "content"),
        ({"role": "user", "content": 3}, "content"),
        ({"role": "user", "content": "x", "created_at": datetime(2024, 1, 1)}, "timezone"),
        ({"role": "tool", "content": "x"}, "tool_call_id"),
        ({"role": "user", "content": "x", "tool_call_id": "c"}, "tool_call_id"),
        ({"role": "assistant", "content": "x", "images": ["u"]}, "images"),
        ({"role": "user", "content": "x", "tool_calls": [{"id": "c", "name": "f"}]}, "tool_calls"),
        ({"role": "user", "content": "x", "name": "  "}, "name"),
        ({"role": "user", "content": "x", "metadata": {"k": b"bytes"}}, "JSON"),
        ({"role": "user", "content": "x", "metadata": {1: "v"}}, "keys must be strings"),
    ],
)
def test_bad_messages_get_a_clear_error(data: dict[str, Any], reason: str) -> None:
    with pytest.raises(MessageFormatError, match=reason):
        MessageNode.from_dict(data)


def test_node_is_deeply_immutable_and_hashable() -> None:
    node = MessageNode.from_dict(
        {"role": "user", "content": "x", "metadata": {"why": ["a"], "more": {"b": 1}}}
    )
    assert isinstance(node.metadata, FrozenMap) and node.metadata["why"] == ("a",)
    with pytest.raises(Exception, match="frozen"):
        node.content = "y"  # type: ignore[misc]
    with pytest.raises(TypeError):
        node.metadata["why"] = "b"  # type: ignore[index]
    with pytest.raises(AttributeError):
        node.metadata["more"].update({"b": 2})
    assert hash(node) == hash(MessageNode.from_dict(node.to_dict()))
    assert node.replace(content="y").content == "y" and node.content == "x"


def test_times_become_utc_and_snowflakes_text() -> None:
    plus_two = timezone(timedelta(hours=2))
    node = MessageNode(
        role="user",
        content="x",
        created_at=datetime(2024, 1, 1, 14, tzinfo=plus_two),
        user_id=80351110224678912,  # type: ignore[arg-type]
    )
    assert node.created_at == datetime(2024, 1, 1, 12, tzinfo=UTC)
    assert node.created_at.tzinfo is UTC
    assert node.user_id == "80351110224678912"


# --- OpenAI -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "user_id", "expected"),
    [
        ("alice", None, "alice"),
        ("Big-Bob_2", None, "Big-Bob_2"),
        ("Zoë Smith", None, "Zoe_Smith"),
        ("bob!!", None, "bob"),
        ("bob\n", None, "bob"),
        ("山田", "42", "user_42"),
        ("山田", None, None),
        ("x" * 80, None, "x" * 64),
        (None, "42", None),
    ],
)
def test_openai_names_are_sanitized(name: str | None, user_id: str | None, expected: str) -> None:
    assert openai_name(name, user_id) == expected


def test_openai_message_shapes() -> None:
    nodes = [
        MessageNode(role="system", content="be nice"),
        MessageNode(role="user", content="look", name="Zoë", images=("https://x/a.png",)),
        MessageNode(
            role="assistant",
            content="",
            tool_calls=(ToolCall(id="c1", name="lookup", arguments='{"q": "a"}'),),
        ),
        MessageNode(role="tool", content="found", tool_call_id="c1"),
        MessageNode(role="assistant", content="done", user_id="9", message_id="10"),
    ]
    assert to_openai(nodes) == [
        {"role": "system", "content": "be nice"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "https://x/a.png"}},
            ],
            "name": "Zoe",
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q": "a"}'},
                }
            ],
        },
        {"role": "tool", "content": "found", "tool_call_id": "c1"},
        {"role": "assistant", "content": "done"},
    ]


def test_from_openai_reads_api_shapes_and_refuses_what_it_cannot_hold() -> None:
    response_message = {
        "role": "assistant",
        "content": "hi",
        "refusal": None,
        "annotations": [],
    }
    assert from_openai([response_message]) == [MessageNode(role="assistant", content="hi")]
    assert from_openai([{"role": "developer", "content": "rules"}])[0].role == "system"
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert from_openai([{"role": "user", "content": parts}])[0].content == "a\nb"
    with pytest.raises(MessageFormatError, match="audio"):
        from_openai([{"role": "assistant", "content": "x", "audio": {"id": "a1"}}])
    with pytest.raises(MessageFormatError, match="content part"):
        from_openai([{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}])
    with pytest.raises(MessageFormatError):
        from_openai([{"role": "function", "content": "x"}])


def test_graph_builds_from_openai_and_back() -> None:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u", "name": "al"}]
    g = MessageGraph.from_openai(messages)
    assert g.to_openai() == messages and g.snapshot().to_openai() == messages


# Strategies for what each format can carry.
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
OPENAI_NAMES = st.none() | st.from_regex(r"[A-Za-z0-9_-]{1,10}", fullmatch=True)
URLS = st.sampled_from(["https://cdn.example/a.png", "data:image/png;base64,iVBORw0KGgo="])
ARGS = st.dictionaries(st.text(max_size=4), st.integers() | st.text(max_size=4), max_size=2)
CALLS = st.lists(
    st.builds(
        lambda i, n, a: ToolCall(
            id=f"call_{i}", name=n, arguments=json.dumps(a, ensure_ascii=False)
        ),
        st.integers(0, 99),
        st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
        ARGS,
    ),
    max_size=2,
).map(tuple)


def node_strategy(text: st.SearchStrategy[str], names: st.SearchStrategy[str | None]) -> Any:
    return st.one_of(
        st.builds(MessageNode, role=st.just("system"), content=text),
        st.builds(
            MessageNode,
            role=st.just("user"),
            content=text,
            name=names,
            images=st.lists(URLS, max_size=2).map(tuple),
        ),
        st.builds(
            MessageNode, role=st.just("assistant"), content=text, name=names, tool_calls=CALLS
        ),
        st.builds(
            MessageNode,
            role=st.just("tool"),
            content=text,
            tool_call_id=st.from_regex(r"call_[0-9]{1,2}", fullmatch=True),
        ),
    )


def _carried(node: MessageNode, fields: tuple[str, ...]) -> dict[str, Any]:
    return {key: value for key, value in node.to_dict().items() if key in fields}


@settings(max_examples=150, deadline=None)
@given(st.lists(node_strategy(TEXT, OPENAI_NAMES), max_size=8))
def test_openai_round_trips_what_it_carries(nodes: list[MessageNode]) -> None:
    back = from_openai(to_openai(nodes))
    expected = [_carried(n, OPENAI_FIELDS) for n in nodes]
    assert [n.to_dict() for n in back] == expected
    assert to_openai(back) == to_openai(nodes)  # and the provider side is stable


@settings(max_examples=100, deadline=None)
@given(st.lists(node_strategy(TEXT, OPENAI_NAMES), max_size=8))
def test_openai_messages_survive_a_trip_through_nodes(nodes: list[MessageNode]) -> None:
    messages = json.loads(json.dumps(to_openai(nodes)))  # as received over the wire
    assert to_openai(from_openai(messages)) == messages


# --- Anthropic --------------------------------------------------------------------------------


def test_anthropic_shape_merges_turns_and_carries_names_in_text() -> None:
    nodes = [
        MessageNode(role="system", content="be nice"),
        MessageNode(role="user", content="hi", name="alice"),
        MessageNode(role="user", content="see", name="bob", images=("https://x/a.png",)),
        MessageNode(
            role="assistant",
            content="checking",
            tool_calls=(ToolCall(id="c1", name="lookup", arguments='{"q": "a"}'),),
        ),
        MessageNode(role="tool", content="found", tool_call_id="c1"),
        MessageNode(role="user", content="thanks", name="alice"),
        MessageNode(role="assistant", content="welcome"),
    ]
    system, messages = to_anthropic(nodes)
    assert system == "be nice"
    assert messages == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[alice] hi"},
                {"type": "image", "source": {"type": "url", "url": "https://x/a.png"}},
                {"type": "text", "text": "[bob] see"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "checking"},
                {"type": "tool_use", "id": "c1", "name": "lookup", "input": {"q": "a"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "found"},
                {"type": "text", "text": "[alice] thanks"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "welcome"}]},
    ]
    assert from_anthropic(system, messages) == nodes


def test_anthropic_known_losses_are_the_documented_ones() -> None:
    nodes = [
        MessageNode(role="system", content="one"),
        MessageNode(role="user", content="hi"),
        MessageNode(role="system", content="two"),
        MessageNode(role="user", content="", user_id="5"),
    ]
    system, messages = to_anthropic(nodes)
    assert system == "one\n\ntwo"
    assert messages == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert from_anthropic(system, messages) == [
        MessageNode(role="system", content="one\n\ntwo"),
        MessageNode(role="user", content="hi"),
    ]


def test_anthropic_inputs_in_other_shapes() -> None:
    nodes = from_anthropic(
        [{"type": "text", "text": "sys a"}, {"type": "text", "text": "sys b"}],
        [
            {"role": "user", "content": "[carol] plain string content"},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "c9",
                        "content": [{"type": "text", "text": "boom"}],
                        "is_error": True,
                    },
                ],
            },
        ],
    )
    assert nodes[0] == MessageNode(role="system", content="sys a\n\nsys b")
    assert nodes[1] == MessageNode(role="user", content="plain string content", name="carol")
    assert nodes[2].metadata == {"tool_error": True}
    assert to_anthropic(nodes[2:])[1][0]["content"][0]["is_error"] is True
    with pytest.raises(MessageFormatError, match="thinking"):
        from_anthropic(None, [{"role": "assistant", "content": [{"type": "thinking"}]}])
    with pytest.raises(MessageFormatError, match="user and assistant"):
        from_anthropic(None, [{"role": "system", "content": "x"}])
    with pytest.raises(MessageFormatError, match="JSON object"):
        to_anthropic(
            [
                MessageNode(
                    role="assistant",
                    content="x",
                    tool_calls=(ToolCall(id="c", name="f", arguments="[1]"),),
                )
            ]
        )


ANTHROPIC_TEXT = TEXT.filter(lambda t: t != "" and not t.startswith("["))
ANTHROPIC_NAMES = st.none() | st.from_regex(r"[^\[\]\n]{1,10}", fullmatch=True).filter(str.strip)


@settings(max_examples=150, deadline=None)
@given(
    st.none() | st.builds(MessageNode, role=st.just("system"), content=ANTHROPIC_TEXT),
    st.lists(
        node_strategy(ANTHROPIC_TEXT, ANTHROPIC_NAMES).filter(lambda n: n.role != "system"),
        max_size=8,
    ),
)
def test_anthropic_round_trips_what_it_carries(
    system: MessageNode | None, turns: list[MessageNode]
) -> None:
    nodes = ([system] if system else []) + turns
    back = from_anthropic(*to_anthropic(nodes))
    assert [n.to_dict() for n in back] == [_carried(n, OPENAI_FIELDS) for n in nodes]
    system_text, messages = to_anthropic(nodes)
    roles = [m["role"] for m in messages]
    assert all(a != b for a, b in itertools.pairwise(roles))  # turns alternate
    wire = json.loads(json.dumps(messages))
    assert to_anthropic(from_anthropic(system_text, wire)) == (system_text, wire)


@settings(max_examples=150, deadline=None)
@given(st.lists(node_strategy(TEXT, OPENAI_NAMES), max_size=8), st.integers(0, 9))
def test_the_blocks_of_a_start_are_counted_in_the_one_translation(
    nodes: list[MessageNode], upto: int
) -> None:
    """What a cache breakpoint needs, without translating the start apart (as it once was)."""
    system, turns, count = to_anthropic_upto(nodes, upto)
    assert (system, turns) == to_anthropic(nodes)
    start = to_anthropic(nodes[:upto])[1]
    assert count == sum(len(turn["content"]) for turn in start)
    assert [b for t in turns for b in t["content"]][:count] == [
        b for t in start for b in t["content"]
    ]
