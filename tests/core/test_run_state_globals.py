"""No context variable or module global carries a run's data (issue 45): a run's settings and state
travel in objects passed explicitly. This test reads src/chainform with `ast` and lists every place
where data could hide from a reader, each named by file and line:

- every `ContextVar(...)`;
- a module-level name bound to a mutable container (a dict, list or set literal or comprehension, or a
  call of `dict`, `list`, `set`, `OrderedDict`, `defaultdict`, `deque`, `Counter`, a weak set or weak
  dictionary, `bytearray`) that a function of the module mutates (item assignment or deletion, an
  augmented assignment, or a mutating method: `add`, `append`, `update`, `pop`, `setdefault`, ...);
- a module-level name bound to an instance (any other call) whose attributes a function assigns;
- a `global NAME` that a function rebinds;
- another module's global set from a function (`module.name = ...` where `module` is imported).

A heuristic: it does not see a mutating method of an instance of chainform's own classes, a
class attribute or a `functools.cache`. What it finds must be in `ALLOWED` with the reason it holds
no run's data: a frozen table, or a cache of a process-wide fact (an imported module, a loaded model,
a pure function's result). An entry marked `BEING_REMOVED` is tolerated while issue 45's work removes it.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

import chainform

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

SRC = Path(chainform.__file__).parent

BEING_REMOVED = "being removed (issue 45)"

ALLOWED: dict[str, str] = {
    # run data still in context variables while issue 45's RunState takes it over: none left
    # process-wide facts and resources
    "_sync.py:_loop": "the one background event loop that runs sync calls, made once per process",
    "_sync.py:_thread": "the thread of that loop",
    "_map/_lock.py:_held": "lock files this process holds: an OS lock belongs to the process",
    "cli/_tools.py:_functions_files": "files whose os._exit is guarded: the os._exit patch is process-wide",
    "clients/registry.py:_ALIASES": "model aliases: built in, and those the program registers for itself",
    "documents/_ocr.py:_engine": "the OCR model, loaded once per process",
    "local/_engine.py:_loaded": "the embedded models, loaded once per process",
    "keys.py:_loaded": "every key seen, masked everywhere in the process",
    "keys.py:_longest_first": "the same keys, longest first",
    "otel/__init__.py:_trace.hooks": "the tracing hooks `instrument` installs for the process",
    "cli/__init__.py:warnings.formatwarning": "warnings are formatted by the process: the CLI's one line",
    "cli/_group.py:warnings.formatwarning": "the same, for one command's run, and put back after it",
    "cli/__init__.py:sys.stdin": "the process's stdin, opened on os.devnull when it started without one",
    "cli/_tools.py:os._exit": "os._exit guarded while --functions code loads and runs (process-wide)",
    "tools/_sandbox/_run.py:_warned": "a warning said once per process",
    # caches of pure functions' results, keyed by their input
    "schema/dialects.py:_cache": "converted schemas by canonical JSON text",
    "schema/dialects.py:_nullable_cache": "validators by canonical JSON text",
    "schema/validate.py:_cache": "compiled validators by canonical JSON text",
    "schema/validate.py:_EXACT": "a validator class per draft class",
    "tools/_schema.py:_NATIVE_OK": "whether pydantic takes a type natively, per type",
}

_CONTAINERS = {
    "dict",
    "list",
    "set",
    "OrderedDict",
    "defaultdict",
    "deque",
    "Counter",
    "WeakSet",
    "WeakKeyDictionary",
    "WeakValueDictionary",
    "bytearray",
}
_MUTATORS = {
    "add",
    "append",
    "appendleft",
    "clear",
    "discard",
    "extend",
    "extendleft",
    "insert",
    "move_to_end",
    "pop",
    "popitem",
    "popleft",
    "remove",
    "reverse",
    "setdefault",
    "sort",
    "update",
}
_LITERALS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)


@dataclass(frozen=True)
class Finding:
    path: str  # relative to src/chainform
    line: int
    name: str
    kind: str

    @property
    def key(self) -> str:
        return f"{self.path}:{self.name}"

    def __str__(self) -> str:
        return f"chainform/{self.path}:{self.line}: {self.name} ({self.kind})"


def _called(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _module_names(tree: ast.Module) -> tuple[dict[str, int], dict[str, int], set[str]]:
    """Module-level names bound to a mutable container, to an instance, and imported modules."""
    containers: dict[str, int] = {}
    instances: dict[str, int] = {}
    modules: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            modules.update((alias.asname or alias.name).partition(".")[0] for alias in statement.names)
        if isinstance(statement, ast.ImportFrom):
            modules.update(alias.asname or alias.name for alias in statement.names)
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            if isinstance(value, _LITERALS) or (
                isinstance(value, ast.Call) and _called(value.func) in _CONTAINERS
            ):
                containers[target.id] = statement.lineno
            elif isinstance(value, ast.Call):
                instances[target.id] = statement.lineno
    return containers, instances, modules


def findings(source: str, path: str) -> list[Finding]:
    """What `source` (the module at `path`) keeps outside the objects a run passes along."""
    tree = ast.parse(source)
    found: dict[str, Finding] = {}

    def note(name: str, line: int, kind: str) -> None:
        found.setdefault(name, Finding(path, line, name, kind))

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node.func) == "ContextVar":
            note(_bound_name(tree, node) or f"ContextVar@{node.lineno}", node.lineno, "context variable")
    containers, instances, modules = _module_names(tree)
    for function in _outermost_functions(tree.body):
        nodes = list(ast.walk(function))  # a nested function's names count as its outer one's
        declared = {name for node in nodes if isinstance(node, ast.Global) for name in node.names}
        local = _local_names(nodes, declared)
        for node in nodes:
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign | ast.Delete):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            for target in _flat(targets):
                if isinstance(target, ast.Name) and target.id in declared:
                    note(target.id, target.lineno, "global rebound in a function")
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    if target.value.id in containers and target.value.id not in local:
                        note(target.value.id, containers[target.value.id], "module-level container mutated")
                elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    owner = target.value.id
                    if owner in local:
                        continue
                    if owner in instances:
                        note(owner, instances[owner], "module-level instance's attribute assigned")
                    elif owner in modules:
                        note(f"{owner}.{target.attr}", target.lineno, "another module's global set")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in containers
                and node.func.attr in _MUTATORS
                and node.func.value.id not in local
            ):
                note(node.func.value.id, containers[node.func.value.id], "module-level container mutated")
    return sorted(found.values(), key=lambda f: (f.path, f.line, f.name))


def _flat(targets: list[ast.expr]) -> list[ast.expr]:
    """Assignment targets with tuples and lists unpacked (`a, b = ...` binds `a` and `b`)."""
    out: list[ast.expr] = []
    for target in targets:
        if isinstance(target, ast.Tuple | ast.List):
            out.extend(_flat(list(target.elts)))
        elif isinstance(target, ast.Starred):
            out.extend(_flat([target.value]))
        else:
            out.append(target)
    return out


def _bound_name(tree: ast.Module, call: ast.Call) -> str | None:
    """The module-level name a `ContextVar(...)` is assigned to, if any."""
    for statement in tree.body:
        if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is call:
            target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
            return target.id if isinstance(target, ast.Name) else None
    return None


def _outermost_functions(body: list[ast.stmt]) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions of a module and of its classes, not those nested in a function."""
    out: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for statement in body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            out.append(statement)
        elif isinstance(statement, ast.ClassDef):
            out.extend(_outermost_functions(statement.body))
        elif isinstance(statement, ast.If | ast.Try | ast.With):  # `if TYPE_CHECKING:`, `try: import`
            inner = [*statement.body, *getattr(statement, "orelse", []), *getattr(statement, "finalbody", [])]
            for handler in getattr(statement, "handlers", []):
                inner.extend(handler.body)
            out.extend(_outermost_functions(inner))
    return out


def _local_names(nodes: list[ast.AST], declared: set[str]) -> set[str]:
    """Names a function binds itself (parameters, assignments, its nested functions' too), which
    shadow the module's."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in declared:
            names.add(node.id)
    return names


@functools.cache
def every_finding(src: Path = SRC) -> tuple[Finding, ...]:
    out: list[Finding] = []
    for file in sorted(src.rglob("*.py")):
        out.extend(findings(file.read_text(encoding="utf-8"), file.relative_to(src).as_posix()))
    return tuple(out)


def unlisted(found: Sequence[Finding], allowed: dict[str, str] = ALLOWED) -> list[str]:
    return [str(f) for f in found if f.key not in allowed]


def test_no_context_variable_or_module_global_holds_a_runs_data() -> None:
    problems = unlisted(every_finding())
    assert not problems, (
        "run data outside RunState (pass it explicitly, or allow-list a process-wide fact):\n"
        + "\n".join(problems)
    )


def test_every_allowed_entry_still_exists_unless_being_removed() -> None:
    keys = {f.key for f in every_finding()}
    stale = [key for key, why in ALLOWED.items() if key not in keys and why != BEING_REMOVED]
    assert not stale, f"allow-list entries that match nothing any more (delete them): {stale}"


SNIPPET = """
import contextvars
from chainform import _trace

_RUNS: dict[str, int] = {}
_SEEN = set()
_CONFIG = Settings()
_TOTAL = 0
TABLE = {"a": 1}
current = contextvars.ContextVar("current")


def remember(run_id, calls):
    global _TOTAL
    _RUNS[run_id] = calls
    _SEEN.add(run_id)
    _TOTAL += calls
    _CONFIG.last = run_id
    _trace.hooks = None
    return TABLE["a"]


def shadowed(_SEEN):
    _SEEN.add(1)
"""


def test_the_scan_names_each_kind_by_file_and_line() -> None:
    found = findings(SNIPPET, "fake.py")
    assert [str(f) for f in found] == [
        "chainform/fake.py:5: _RUNS (module-level container mutated)",
        "chainform/fake.py:6: _SEEN (module-level container mutated)",
        "chainform/fake.py:7: _CONFIG (module-level instance's attribute assigned)",
        "chainform/fake.py:10: current (context variable)",
        "chainform/fake.py:17: _TOTAL (global rebound in a function)",
        "chainform/fake.py:19: _trace.hooks (another module's global set)",
    ]
    assert unlisted(found, {"fake.py:_RUNS": "a test"}) == [str(f) for f in found[1:]]
