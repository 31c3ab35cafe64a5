"""MessageGraph: a list-of-dicts interface over an immutable, branching message graph."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conversation.graph.formats import to_openai
from conversation.graph.message_graph import MessageGraph
from conversation.graph.node import MessageFormatError, MessageNode
from conversation.graph.views import ImmutableSnapshotError, MessageView, Snapshot, StaleViewError


def sys_(text: str = "You are helpful.") -> dict[str, Any]:
    return {"role": "system", "content": text}


def user(text: str, name: str | None = None) -> dict[str, Any]:
    return {"role": "user", "content": text} | ({"name": name} if name else {})


def bot(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def test_the_issue_example_works_as_written() -> None:
    g = MessageGraph()
    g.append({"role": "system", "content": "You are helpful."})
    g.append({"role": "user", "content": "hi", "name": "alice"})
    g.append({"role": "assistant", "content": "hello"})
    seen = g.snapshot()
    g[1]["content"] = "hi there"
    g[1] = {"role": "user", "content": "hey"}
    assert seen[1]["content"] == "hi"
    assert len(g) == 3 and g[1]["content"] == "hey"
    assert g.to_openai() == [sys_(), user("hey"), bot("hello")]
    assert list(g.training_samples()) == [
        {"messages": [sys_(), {"role": "user", "content": "hi", "name": "alice"}, bot("hello")]}
    ]


def test_nested_assignment_is_recorded_as_a_version() -> None:
    g = MessageGraph([sys_(), user("hi", "alice")])
    g[1]["content"] = "hi there"
    assert g[1] == user("hi there", "alice")
    assert [node.content for node in g.versions(1)] == ["hi", "hi there"]
    assert list(g.parallel_edges()) == [(1, 2)]
    assert g.replaced(g.node_id(1)) == (1,)


def test_view_update_is_one_edit_and_delete_key_resets_field() -> None:
    g = MessageGraph([user("hi", "alice")])
    g[0].update(content="yo", user_id=42)
    assert g[0].to_dict() == {"role": "user", "content": "yo", "name": "alice", "user_id": "42"}
    assert len(g.versions(0)) == 2
    del g[0]["name"]
    assert "name" not in g[0] and g[0].get("name") is None
    with pytest.raises(KeyError):
        del g[0]["name"]


def test_snapshots_are_immutable_and_say_so() -> None:
    g = MessageGraph([user("hi")])
    snap = g.snapshot()
    with pytest.raises(ImmutableSnapshotError, match="edit the MessageGraph"):
        snap[0]["content"] = "x"
    with pytest.raises(ImmutableSnapshotError):
        snap[0] = user("x")
    with pytest.raises(ImmutableSnapshotError):
        del snap[0]
    popped = g.pop()
    with pytest.raises(ImmutableSnapshotError):
        popped["content"] = "x"
    assert snap[0]["content"] == "hi" and len(g) == 0


def test_nested_values_cannot_be_mutated_behind_the_graphs_back() -> None:
    g = MessageGraph([{"role": "user", "content": "x", "images": ["u"], "metadata": {"why": []}}])
    assert isinstance(g[0]["images"], tuple)
    with pytest.raises(TypeError):
        g[0]["metadata"]["why"] = "changed"  # type: ignore[index]
    with pytest.raises(AttributeError):
        g[0]["metadata"]["why"].append(1)
    copy = g[0].to_dict()  # a detached, plain copy
    copy["metadata"]["why"].append(1)
    assert g[0].to_dict()["metadata"] == {"why": []}


def test_unknown_keys_and_bad_messages_are_refused_without_changing_the_graph() -> None:
    g = MessageGraph([user("hi")])
    with pytest.raises(MessageFormatError, match="unknown message field"):
        g.append({"role": "user", "content": "x", "nmae": "typo"})
    with pytest.raises(MessageFormatError, match="unknown message field"):
        g[0]["colour"] = "red"
    with pytest.raises(MessageFormatError):
        g[0]["role"] = "narrator"
    with pytest.raises(MessageFormatError):
        g.append("just text")  # type: ignore[arg-type]
    assert g.to_dicts() == [user("hi")] and len(g.state.nodes) == 1


def test_edit_before_an_assistant_turn_makes_a_branch() -> None:
    g = MessageGraph([sys_(), user("hi"), bot("hello"), user("and?")])
    assert g.branch == 0
    g[3] = user("and then?")  # after the last assistant turn: no branch
    assert g.branch == 0 and len(g.branches()) == 1
    old_head = g.snapshot()
    g[0]["content"] = "Be terse."  # before it: the prefix of "hello" is broken
    assert g.branch == 1
    first, second = g.branches()
    assert (second.parent, second.fork_index, second.cause) == (0, 0, "edit")
    assert first.head == old_head and first.head[0]["content"] == "You are helpful."
    assert second.current and not first.current and second.head == g.snapshot()
    g[3] = user("hm")  # the carried-over "hello" has no intact context here: no new branch
    assert g.branch == 1


def test_delete_and_insert_before_an_assistant_turn_branch_too() -> None:
    g = MessageGraph([user("a"), bot("b"), user("c")])
    del g[2]
    assert g.branch == 0
    g.insert(1, user("a2"))
    assert g.branch == 1 and g.branches()[1].cause == "insert"
    g.append(bot("d"))
    del g[0]
    assert g.branch == 2 and g.branches()[2].cause == "delete"


def test_regenerating_the_assistant_turn_keeps_both_samples() -> None:
    g = MessageGraph([user("q"), bot("first try")])
    g[-1] = bot("second try")
    assert g.branch == 1
    assert [s["messages"][-1]["content"] for s in g.training_samples()] == [
        "first try",
        "second try",
    ]
    assert [s["messages"][-1]["content"] for s in g.training_samples(branch=0)] == ["first try"]
    assert [s["messages"][-1]["content"] for s in g.training_samples(branch=1)] == ["second try"]


def test_branch_shares_samples_before_its_fork_and_adds_its_own() -> None:
    g = MessageGraph([user("q1"), bot("a1"), user("q2"), bot("a2"), user("q3")])
    g[2] = user("q2 edited")  # breaks a2 only
    g.append(bot("a3"))
    shared_and_added = [s["messages"][-1]["content"] for s in g.training_samples(branch=1)]
    assert shared_and_added == ["a1", "a3"]
    assert [s.branch for s in g.training_records(branch=1)] == [0, 1]
    a3 = list(g.training_samples(branch=1))[-1]["messages"]
    assert [m["content"] for m in a3] == ["q1", "a1", "q2 edited", "a2", "q3", "a3"]
    everything = [s["messages"][-1]["content"] for s in g.training_samples()]
    assert everything == ["a1", "a2", "a3"]
    a2 = list(g.training_samples())[1]["messages"]
    assert [m["content"] for m in a2] == ["q1", "a1", "q2", "a2"]  # never the edited q2


def test_training_samples_are_openai_jsonl_lines() -> None:
    g = MessageGraph([sys_(), user("hi", "bob"), bot("yo")])
    line = json.dumps(next(g.training_samples()))
    assert json.loads(line) == {"messages": [sys_(), user("hi", "bob"), bot("yo")]}


def test_list_protocol_matches_a_list() -> None:
    g = MessageGraph([user("a"), user("b"), user("c")])
    plain = [user("a"), user("b"), user("c")]
    assert g[-1] == plain[-1] and g[-3] == plain[0]
    with pytest.raises(IndexError):
        g[3]
    with pytest.raises(IndexError):
        g[-4]
    for where in (-10, -1, 1, 99):
        g.insert(where, user(f"at {where}"))
        plain.insert(where, user(f"at {where}"))
    assert g.to_dicts() == plain
    g[1:3] = [user("x")]
    plain[1:3] = [user("x")]
    del g[-2:]
    del plain[-2:]
    assert g.to_dicts() == plain
    assert [v["content"] for v in g[::2]] == [m["content"] for m in plain[::2]]
    assert user("x") in g and g.index(user("x")) == plain.index(user("x"))
    g.reverse()
    plain.reverse()
    g.remove(user("x"))
    plain.remove(user("x"))
    g += [user("tail")]
    plain += [user("tail")]
    assert g.to_dicts() == plain and [v.to_dict() for v in g] == plain
    with pytest.raises(ValueError, match="step 1"):
        g[::2] = []
    g.clear()
    assert len(g) == 0 and len(g.state.nodes) > 0


def test_equality_is_by_role_and_content() -> None:
    g = MessageGraph([user("hi", "alice"), bot("yo")])
    assert g == [{"role": "user", "content": "hi"}, bot("yo")]
    assert g == MessageGraph([user("hi", "bob"), bot("yo")])
    assert g == g.snapshot() and g.snapshot() == g
    assert g != [user("hi")] and g != [user("hi"), user("yo")]
    assert g != "hi"
    assert g[0] != {"role": "user", "content": "hi"}  # one message compares like a dict
    assert g[0] == {"role": "user", "content": "hi", "name": "alice"}


def test_snapshot_is_a_cheap_immutable_sequence() -> None:
    g = MessageGraph([sys_(), user("a"), bot("b")])
    snap = g.snapshot()
    g.append(user("c"))
    g[1] = user("changed")
    assert len(snap) == 3 and snap[-1]["content"] == "b"
    assert isinstance(snap[1:], Snapshot) and snap[1:].to_dicts() == [user("a"), bot("b")]
    assert snap.to_openai() == to_openai(snap.nodes())
    twin = MessageGraph([sys_(), user("a", "someone"), bot("b")]).snapshot()
    assert snap == twin and hash(snap) == hash(twin) and {snap: 1}[twin] == 1
    assert snap != g.snapshot()[:3]
    assert [v["content"] for v in snap] == ["You are helpful.", "a", "b"]


def test_a_view_refuses_to_write_after_its_position_changed() -> None:
    g = MessageGraph([user("a"), user("b")])
    view = g[1]
    view["content"] = "b1"
    view["content"] = "b2"  # the view follows its own edits
    assert g[1]["content"] == "b2"
    g.insert(0, user("first"))
    with pytest.raises(StaleViewError, match="read graph"):
        view["content"] = "lost?"
    assert [v["content"] for v in g] == ["first", "a", "b2"]
    other = g[0]
    g[2]["content"] = "unrelated position"
    other["content"] = "still fine"
    assert g[0]["content"] == "still fine"


def test_squash_links_every_replaced_message() -> None:
    g = MessageGraph([sys_(), user("a"), bot("b"), user("c")])
    g.squash(1, 3, {"role": "system", "content": "summary of a and b"})
    assert [v["content"] for v in g] == ["You are helpful.", "summary of a and b", "c"]
    assert [n.content for n in g.versions(1)] == ["a", "b", "summary of a and b"]
    assert g.branch == 1 and g.branches()[1].cause == "squash"
    with pytest.raises(IndexError):
        g.squash(2, 2, user("nothing to squash"))


def test_find_locates_a_discord_message() -> None:
    g = MessageGraph([{"role": "user", "content": "a", "message_id": 111}, user("b")])
    assert g.find(111) == 0 and g.find("111") == 0 and g.find(5) is None
    g[g.find(111)]["content"] = "a (edited in Discord)"
    assert g.versions(0)[0].content == "a"


def test_equal_edit_is_a_no_op() -> None:
    g = MessageGraph([user("q"), bot("a")])
    state = g.state
    g[0] = user("q")
    g[1]["content"] = "a"
    assert g.state is state and g.branch == 0


def test_copy_and_from_state_share_history_then_diverge() -> None:
    g = MessageGraph([user("q"), bot("a")])
    h = g.copy()
    h.append(user("only in h"))
    assert len(g) == 2 and len(h) == 3
    assert MessageGraph.from_state(h.state) == h


def test_views_are_mappings_of_the_set_fields() -> None:
    g = MessageGraph([user("hi", "alice")])
    view = g[0]
    assert isinstance(view, MessageView) and view.writable and view.index == 0
    assert list(view) == ["role", "content", "name"] and len(view) == 3
    assert dict(view) == user("hi", "alice") and view.copy() == user("hi", "alice")
    assert view.node == MessageNode(role="user", content="hi", name="alice")


# --- property: the graph behaves like a list, and keeps what models saw --------------------------

CONTENTS = st.sampled_from(["hi", "yo", "ok", "?"])
MESSAGES = st.one_of(
    st.builds(lambda c: {"role": "system", "content": c}, CONTENTS),
    st.builds(
        lambda c, n: {"role": "user", "content": c} | ({"name": n} if n else {}),
        CONTENTS,
        st.sampled_from([None, "alice", "bob"]),
    ),
    st.builds(lambda c: {"role": "assistant", "content": c}, CONTENTS),
    st.builds(lambda c: {"role": "tool", "content": c, "tool_call_id": "t1"}, CONTENTS),
)
INDEX = st.integers(-12, 12)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), MESSAGES),
        st.tuples(st.just("set"), INDEX, MESSAGES),
        st.tuples(st.just("set_content"), INDEX, CONTENTS),
        st.tuples(st.just("insert"), INDEX, MESSAGES),
        st.tuples(st.just("delete"), INDEX),
        st.tuples(st.just("set_slice"), INDEX, INDEX, st.lists(MESSAGES, max_size=3)),
        st.tuples(st.just("snapshot")),
    ),
    max_size=40,
)


def _norm(message: dict[str, Any]) -> dict[str, Any]:
    return MessageNode.from_dict(message).to_dict()


def _apply(op: tuple, g: MessageGraph, plain: list[dict[str, Any]]) -> tuple[int, list[int]]:
    """Apply ``op`` to both; return (first changed position, positions of new messages)."""
    kind = op[0]
    size = len(plain)
    if kind == "append":
        g.append(op[1])
        plain.append(_norm(op[1]))
        return size, [size]
    if kind == "insert":
        g.insert(op[1], op[2])
        plain.insert(op[1], _norm(op[2]))
        where = max(0, size + op[1]) if op[1] < 0 else min(op[1], size)
        return where, [where]
    if kind in ("set", "set_content", "delete"):
        if not size:
            return size, []
        where = op[1] % size
        if kind == "set":
            g[where] = op[2]
            plain[where] = _norm(op[2])
        elif kind == "set_content":
            g[where]["content"] = op[2]
            plain[where] = {**plain[where], "content": op[2]}
        else:
            del g[where]
            del plain[where]
            return where, []
        return where, [where]
    start, stop, _ = slice(op[1], op[2]).indices(size)
    stop = max(start, stop)
    g[op[1] : op[2]] = op[3]
    plain[start:stop] = [_norm(m) for m in op[3]]
    return start, list(range(start, start + len(op[3])))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_graph_matches_a_list_and_keeps_every_context(ops: list[tuple]) -> None:
    g = MessageGraph()
    plain: list[dict[str, Any]] = []
    snapshots: list[tuple[Snapshot, list[dict[str, Any]]]] = []
    expected_samples: list[dict[str, Any]] = []
    for op in ops:
        if op[0] == "snapshot":
            snapshots.append((g.snapshot(), list(plain)))
            continue
        before = list(plain)
        valid_before = [s.position for s in g.training_records(branch=g.branch)]
        branch_before = g.branch
        start, added = _apply(op, g, plain)
        changed = plain != before
        # An assistant message that entered is a sample, with the context it entered after.
        if changed:
            for position in added:
                if plain[position]["role"] == "assistant":
                    nodes = [MessageNode.from_dict(m) for m in plain[: position + 1]]
                    expected_samples.append({"messages": to_openai(nodes)})
        # A branch is made exactly when an intact assistant turn's context was touched.
        breaks = changed and any(position >= start for position in valid_before)
        assert g.branch == branch_before + (1 if breaks else 0), (op, valid_before)
        assert g.to_dicts() == plain
        assert len(g) == len(plain)
        if plain:
            assert g[-1] == plain[-1] and g[0] == plain[0]
        # Every turn valid on the current branch still sees exactly its context in the head.
        head = g.snapshot().node_ids()
        for sample in g.training_records(branch=g.branch):
            assert sample.context.node_ids() == head[: sample.position]
            assert g.node(head[sample.position]) == sample.turn
    for snapshot, contents in snapshots:
        assert snapshot.to_dicts() == contents
        assert [v.to_dict() for v in snapshot] == contents
    assert list(g.training_samples()) == expected_samples
    for branch in g.branches():
        branch_ids = branch.head.node_ids()
        for sample in g.training_records(branch=branch.id):
            ids = sample.context.node_ids()
            assert branch_ids[: len(ids) + 1] == (*ids, branch_ids[len(ids)])


def test_snapshot_digest_names_exactly_what_was_seen() -> None:
    a = MessageGraph([sys_(), user("hi", "alice")]).snapshot()
    same = MessageGraph([sys_(), user("hi", "alice")]).snapshot()
    other_name = MessageGraph([sys_(), user("hi", "bob")]).snapshot()
    assert a.digest() == same.digest() and len(a.digest()) == 64
    assert a == other_name and a.digest() != other_name.digest()  # equality is role+content only
    assert a[:1].digest() == MessageGraph([sys_()]).snapshot().digest()


def test_small_windows_of_a_long_snapshot_and_unknown_branches() -> None:
    g = MessageGraph([user(str(i)) for i in range(200)])
    window = g.snapshot()[-3:]
    assert [v["content"] for v in window] == ["197", "198", "199"]
    assert window.node_ids() == tuple(g.node_id(i) for i in (-3, -2, -1))
    with pytest.raises(IndexError, match="no branch 5"):
        list(g.training_samples(branch=5))


def test_a_graph_pickles_with_its_history() -> None:
    g = MessageGraph([{"role": "user", "content": "q", "metadata": {"why": ["reply"]}}, bot("a")])
    g[0]["content"] = "q2"
    back = pickle.loads(pickle.dumps(g))
    assert back.to_dicts() == g.to_dicts() and back.branch == g.branch == 1
    assert list(back.training_samples()) == list(g.training_samples())
    assert [n.content for n in back.versions(0)] == ["q", "q2"]
