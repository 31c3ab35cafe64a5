"""The packages' import graph has no circles and goes only downward, so any module can be read
(and imported) on its own and a newcomer can tell from the tree where a change goes.

Every import counts: those inside functions (a function-level import that closes a circle is
still a circle, only hidden until the function runs) and those under ``if TYPE_CHECKING:`` (a
circle in the types is one in the design, only hidden from the interpreter).

``bot``'s and ``conversation``'s packages form layers (``LAYERS``, bottom first, as each
``__init__.py`` tells them): a module may import its own package and the layers below it, never
one above. ``conversation`` sits below every layer of ``bot`` and never imports it. ``lab/`` (the
fitting and quality studies) stands on ``conversation`` alone: it never imports ``bot/`` (the
decisions it studies live in ``conversation``), nor ``bench/`` (the speed benchmarks), which may
use it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "conversation")
# The layers, bottom first: each may import the ones before it, never after. conversation's come
# first: bot may import any of them, they never import bot.
LAYERS = (
    "conversation.common",
    "conversation.sources",
    "conversation.articles",
    "conversation.graph",
    "conversation.selection",
    "conversation.prompt",
    "conversation.memory",
    "conversation.replay",
    "conversation",  # the package's own entry point, above its layers
    "bot.errors",
    "bot.config",
    "bot.storage",
    "bot.tools",
    "bot.model",
    "bot.discord",
    "bot.intake",
    "bot.answering",
    "bot.studio",
    "bot.serve",
    "bot.demo",
    "bot.cli",
)
# bot's own entry points, above every layer.
TOP = ("bot", "bot.__main__")


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


def _imported(tree: ast.AST, name: str, is_package: bool) -> set[str]:
    """Every module ``name`` imports, resolved to its most specific known module."""
    found: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
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


def test_tests_never_import_bench_or_lab() -> None:
    """Shared test support lives under tests/ (bench and lab import it there), never the other
    way: tests run the benchmarks and studies as commands."""
    tests = Path(__file__).resolve().parent
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted(tests.rglob("*.py"))
        if any(
            t.split(".")[0] in ("bench", "lab")
            for t in _imported(ast.parse(path.read_text(encoding="utf-8")), "tests", False)
        )
    ]
    assert not offenders, (
        f"tests import bench or lab (move the shared part to tests/fakes/): {offenders}"
    )


def _layer(module: str) -> int | None:
    """The index of the layer a module belongs to (None outside every layer): the most specific
    layer that holds it, so ``conversation.graph.node`` is in ``conversation.graph``, not in
    ``conversation``."""
    if module in TOP:
        return len(LAYERS)
    found = None
    for index, layer in enumerate(LAYERS):
        if (module == layer or module.startswith(layer + ".")) and (
            found is None or len(layer) > len(LAYERS[found])
        ):
            found = index
    return found


def test_every_module_is_in_a_layer() -> None:
    """A new module at a package's top level (or a new package) must be placed in a layer first.
    ``conversation`` is a layer for its ``__init__`` alone: a module beside it would belong to no
    package."""
    homeless = [
        name
        for name in import_graph()
        if _layer(name) is None
        or (name.startswith("conversation.") and name.count(".") == 1 and name not in LAYERS)
    ]
    assert not homeless, f"modules outside every layer of LAYERS: {homeless}"


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``importer -> imported`` for every import of a higher layer than the importer's."""
    found = []
    for name, targets in sorted(graph.items()):
        own = _layer(name)
        if own is None:
            continue
        for target in sorted(targets):
            theirs = _layer(target)
            if theirs is not None and theirs > own:
                found.append(f"{name} -> {target}")
    return found


def test_packages_import_only_downward() -> None:
    upward = upward_imports(import_graph())
    assert not upward, "imports of a higher layer (see LAYERS):\n" + "\n".join(upward)


def test_the_layer_check_finds_an_upward_import() -> None:
    graph = {
        "bot.config.schema": {"bot.discord.mentions"},
        "bot.cli.main": {"bot.config.schema"},
        "conversation.sources.cache": {"conversation.replay.dce"},
        "conversation.prompt.budget": {"conversation.graph.node"},
    }
    assert upward_imports(graph) == [
        "bot.config.schema -> bot.discord.mentions",
        "conversation.sources.cache -> conversation.replay.dce",
    ]


def test_type_checking_imports_count() -> None:
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from a import b\n")
    assert "a.b" in _imported(tree, "m", False)


def test_every_module_is_named_in_its_package_docstring() -> None:
    """A package's docstring says what lives there: a module it does not name is a room the
    newcomer reading the tree cannot find."""
    unnamed = []
    for init in sorted(
        path for package in PACKAGES for path in (ROOT / package).glob("*/__init__.py")
    ):
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        for module in sorted(init.parent.glob("*.py")):
            if module.stem != "__init__" and f"``{module.stem}``" not in docstring:
                unnamed.append(str(module.relative_to(ROOT)))
    assert not unnamed, f"modules their package's __init__ docstring does not name: {unnamed}"


def test_every_layer_is_named_in_its_top_docstring() -> None:
    """``bot/__init__.py`` and ``conversation/__init__.py`` tell the layers in LAYERS' order."""
    for package in PACKAGES:
        docstring = (
            ast.get_docstring(
                ast.parse((ROOT / package / "__init__.py").read_text(encoding="utf-8"))
            )
            or ""
        )
        layers = [layer for layer in LAYERS if layer.startswith(package + ".")]
        positions = [docstring.find(f"``{layer}``") for layer in layers]
        assert -1 not in positions, f"{package}/__init__.py does not name {layers}"
        assert positions == sorted(positions), (
            f"{package}/__init__.py tells its layers out of order"
        )


def _lab_importing(package: str) -> list[str]:
    """The files of ``lab/`` that import ``package`` (inside functions too)."""
    return [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "lab").rglob("*.py"))
        if any(
            t == package or t.startswith(package + ".")
            for t in _imported(ast.parse(path.read_text(encoding="utf-8")), "lab", False)
        )
    ]


def test_lab_never_imports_bench() -> None:
    """The studies stand on their own; a speed benchmark may reuse a study's data or baselines."""
    offenders = _lab_importing("bench")
    assert not offenders, f"lab imports bench: {offenders}"


def test_lab_never_imports_bot() -> None:
    """What the studies fit and measure (the relevance score, the follow decision and the
    Follower the live bot decides with) lives in ``conversation``; the bot is not needed to run
    them, and a change in the bot cannot move a study's figure."""
    offenders = _lab_importing("bot")
    assert not offenders, f"lab imports bot (what it needs belongs in conversation): {offenders}"


def _face(package: str) -> set[str]:
    """The names a ``conversation`` package offers: its ``__init__``'s ``__all__``."""
    init = ROOT / package.replace(".", "/") / "__init__.py"
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return set()


def behind_the_faces(tree: ast.AST, faces: dict[str, set[str]]) -> list[str]:
    """Each import of ``conversation`` that goes past a package's face: a module deeper than
    ``conversation.<package>``, or a name its ``__all__`` does not offer."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                f"import {alias.name}"
                for alias in node.names
                if alias.name.startswith("conversation.")
            ]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            module = node.module
            if module != "conversation" and not module.startswith("conversation."):
                continue
            offered = faces.get(module)
            if offered is None:
                found.append(f"from {module} import ...")
                continue
            found += [
                f"from {module} import {alias.name}"
                for alias in node.names
                if alias.name not in offered
            ]
    return found


def _faces() -> dict[str, set[str]]:
    return {layer: _face(layer) for layer in LAYERS if layer.split(".")[0] == "conversation"}


def test_outside_conversation_only_its_faces_are_imported() -> None:
    """``bot/``, ``lab/`` and ``bench/`` import ``conversation`` by the names each package's
    ``__init__`` offers (``__all__``), never a module behind it: a module can move or split
    inside ``conversation`` without touching them, and a package's face is its contract."""
    faces = _faces()
    offenders = [
        f"{path.relative_to(ROOT)}: {line}"
        for top in ("bot", "lab", "bench")
        for path in sorted((ROOT / top).rglob("*.py"))
        if ".venv" not in path.parts
        for line in behind_the_faces(ast.parse(path.read_text(encoding="utf-8")), faces)
    ]
    assert not offenders, (
        "imports behind conversation's faces (import the package, add the name to its "
        "__all__):\n" + "\n".join(offenders)
    )


def test_every_face_offers_what_it_imports() -> None:
    """A face's ``__all__`` names exactly what its ``__init__`` imports, and each name is there."""
    for layer, offered in _faces().items():
        assert offered, f"{layer}/__init__.py has no __all__"
        module = __import__(layer, fromlist=["__all__"])
        missing = [name for name in offered if not hasattr(module, name)]
        assert not missing, f"{layer}.__all__ names what it does not import: {missing}"


def test_the_face_check_finds_a_deep_import() -> None:
    tree = ast.parse(
        "from conversation.selection.builder import ContextBuilder\n"
        "from conversation.selection import ContextBuilder, _private\n"
        "import conversation.sources.cache\n"
        "from bot.config import Config\n"
    )
    faces = {"conversation.selection": {"ContextBuilder"}}
    assert behind_the_faces(tree, faces) == [
        "from conversation.selection.builder import ...",
        "from conversation.selection import _private",
        "import conversation.sources.cache",
    ]
