"""The import graph of src/: no circle, no arrow up a layer (docs/architecture.md), one public list.

Every import counts as an arrow: at module level, inside a function, under TYPE_CHECKING. A local
import only hides a circle from the interpreter; a reader still has to go back and forth.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import chainform

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

SRC = Path(chainform.__file__).parent.parent

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # top to bottom; a module may import its own layer and the layers below it, never one above.
    # A module belongs to the longest prefix that names it (a package covers its submodules).
    ("cli", ("chainform.cli",)),
    ("public surface", ("chainform", "chainform.ray", "chainform.evals", "chainform.durable")),
    ("agents", ("chainform.agents",)),
    ("models", ("chainform.models",)),
    ("map", ("chainform.map", "chainform._map")),
    ("response", ("chainform.response",)),
    ("chain", ("chainform.chain",)),
    ("output", ("chainform.output",)),
    ("store", ("chainform.store",)),
    ("pricing", ("chainform.pricing",)),
    ("providers", ("chainform.clients", "chainform.local", "chainform.testing", "chainform.documents")),
    ("tools", ("chainform.tools", "chainform.mcp")),
    ("tracing", ("chainform.otel",)),
    ("types", ("chainform.types",)),
    ("schema", ("chainform.schema",)),
    (
        "base",
        (
            "chainform._json",
            "chainform._bounds",
            "chainform._dialect_names",
            "chainform._lineage",
            "chainform._paths",
            "chainform._sync",
            "chainform._trace",
            "chainform._version",
            "chainform.keys",
        ),
    ),
    ("errors", ("chainform.errors",)),
]


PENDING_UP: set[tuple[str, str]] = set()
# arrows up that a change under way removes; delete an entry when its arrow is gone


def modules(src: Path = SRC) -> dict[str, Path]:
    out = {}
    for path in sorted((src / "chainform").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The chainform modules `name` imports anywhere in its file (an imported name that is a
    submodule counts as that module; anything else as the module it comes from)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def closest(module: str) -> str | None:
        while module and module not in known:
            module = module.rpartition(".")[0]
        return module or None

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [closest(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else closest(base) for a in node.names
            ]
        else:
            continue
        found.update(t for t in targets if t and t.startswith("chainform"))
    found.discard(name)
    return found


@functools.cache
def _graph() -> dict[str, frozenset[str]]:
    found = modules()
    return {name: frozenset(imports(name, path, set(found))) for name, path in found.items()}


def graph() -> dict[str, set[str]]:
    """src/'s import graph, parsed once per test session (each test gets its own copy)."""
    return {name: set(targets) for name, targets in _graph().items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of two or more modules, as one circle through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan; src/ is a few hundred modules deep at most
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(_circle(sorted(group), edges))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def _circle(group: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A path from the group's first module back to itself, for the failure message."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    todo = [start]
    while todo:
        node = todo.pop(0)
        for nxt in sorted(edges[node] & members):
            if nxt == start:
                return [*paths[node], start]
            if nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                todo.append(nxt)
    return group


def layer(module: str) -> int:
    best = (-1, -1)
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or (module.startswith(prefix + ".") and prefix != "chainform"):
                best = max(best, (len(prefix), rank))
    return best[1]


def test_the_walk_sees_every_kind_of_import() -> None:
    edges = graph()
    assert "chainform.chain._engine" in edges["chainform.models"]  # module level
    assert "chainform.clients.registry" in edges["chainform.models"]  # inside a function
    assert "chainform.store" in edges["chainform.chain._calls"]  # under TYPE_CHECKING
    assert "chainform.cli._tools" in edges["chainform.cli._mcp"]


def test_the_cycle_finder_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_src() -> None:
    found = cycles(graph())
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_every_module_has_a_layer() -> None:
    assert [m for m in graph() if layer(m) < 0] == [], "add the new package to LAYERS (and docs)"


def test_no_import_runs_up_a_layer() -> None:
    edges = graph()
    up = [
        f"{src} ({LAYERS[layer(src)][0]}) -> {dst} ({LAYERS[layer(dst)][0]})"
        for src, targets in sorted(edges.items())
        for dst in sorted(targets)
        if layer(dst) < layer(src) and (src, dst) not in PENDING_UP
    ]
    assert not up, "imports up a layer:\n" + "\n".join(up)
    gone = [pair for pair in PENDING_UP if pair[1] not in edges.get(pair[0], set())]
    assert not gone, f"no longer imported, delete from PENDING_UP: {gone}"


def test_the_layers_are_the_documented_ones() -> None:
    text = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    documented = [line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| L")]
    assert documented == [f"L{i} {name}" for i, (name, _) in enumerate(LAYERS)]


def test_the_public_names_come_from_one_table() -> None:
    """`__all__`, the lazy lookup and what type checkers see name the same things."""
    from chainform import _ALIASES, _PUBLIC, _SUBMODULES

    listed = [n for names in _PUBLIC.values() for n in names] + [*_ALIASES, *_SUBMODULES]
    assert sorted(listed) == chainform.__all__ and len(set(listed)) == len(listed)
    tree = ast.parse(Path(chainform.__file__).read_text(encoding="utf-8"))
    typed: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom):
                    typed.update(a.asname or a.name for a in stmt.names)
                elif isinstance(stmt, ast.Assign):
                    typed.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
    assert typed == set(chainform.__all__)
    for name in chainform.__all__:
        assert getattr(chainform, name) is not None
