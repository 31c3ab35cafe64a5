"""The packages' import graph has no circles, so any module can be read (and imported) on its own.

Every import counts, also those inside functions: a function-level import that closes a circle is
still a circle, only hidden until the function runs. Imports under ``if TYPE_CHECKING:`` are left
out, since they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "conversation")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if ".venv" not in path.parts
    }


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(tree: ast.AST, name: str, is_package: bool) -> set[str]:
    """Every module ``name`` imports, resolved to its most specific known module."""
    found: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = _imported(
            ast.parse(path.read_text(encoding="utf-8")), name, path.stem == "__init__"
        )
        known = {t for t in targets if t in modules and t != name}
        # "from a.b import c" names both a.b and (when it is a module) a.b.c: keep the deepest.
        graph[name] = {t for t in known if not any(o.startswith(t + ".") for o in known)}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles_in_bot_or_conversation() -> None:
    found = circles(import_graph())
    assert not found, (
        "import circles (break them, e.g. move shared errors into a leaf module):\n"
        + ("\n".join(" <-> ".join(circle) for circle in found))
    )


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_conversation_never_imports_bot() -> None:
    graph = import_graph()
    # Absolute imports of bot are not in the graph's modules when missing; look at the raw names.
    offenders = [
        name
        for name, path in _modules().items()
        if name.startswith("conversation")
        and any(
            t == "bot" or t.startswith("bot.")
            for t in _imported(ast.parse(path.read_text(encoding="utf-8")), name, False)
        )
    ]
    assert graph and not offenders, f"conversation imports bot: {offenders}"


def test_the_errors_module_is_a_leaf() -> None:
    assert import_graph()["bot.errors"] == set()


def test_tests_never_import_bench() -> None:
    """Shared test support lives under tests/ (bench imports it there), never the other way."""
    tests = Path(__file__).resolve().parent
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted(tests.rglob("*.py"))
        if any(
            t == "bench" or t.startswith("bench.")
            for t in _imported(ast.parse(path.read_text(encoding="utf-8")), "tests", False)
        )
    ]
    assert not offenders, f"tests import bench (move the shared part to tests/fakes/): {offenders}"
