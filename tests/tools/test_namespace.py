"""Safe name spaces: only registered names can be called, and nothing reachable through them."""

import types

import pytest

from chainform.errors import ToolArgumentError, ToolDefinitionError, UnknownToolError
from chainform.tools import Namespace, Tool, Toolbox, call, namespace

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

CALLS: list[str] = []


def greet(name: str) -> str:
    """Say hello."""
    return f"hello {name}"


class Calculator:
    def __init__(self) -> None:
        self.total = 0

    def add(self, n: int) -> int:
        self.total += n
        return self.total

    def _reset(self) -> None:
        self.total = 0

    def __secret__(self) -> str:
        return "secret"


class Box(Toolbox):
    def size(self) -> int:
        return 3


@pytest.fixture
def ns() -> Namespace:
    return namespace(greet, Calculator(), Box(), Tool.from_function(len_of, name="length"))


def len_of(text: str) -> int:
    return len(text)


def test_holds_exactly_what_was_registered(ns: Namespace) -> None:
    assert sorted(ns) == ["add", "greet", "length", "size"]
    assert len(ns) == 4
    assert call(ns, "greet", {"name": "Ann"}) == "hello Ann"
    assert call(ns, "add", {"n": 2}) == 2
    assert ns.call("add", {"n": 3}) == 5
    assert call(ns, "size", {}) == 3
    assert call(ns, "length", {"text": "abc"}) == 3
    assert [s["name"] for s in ns.schemas()] == ["greet", "add", "size", "length"]


async def test_acall(ns: Namespace) -> None:
    assert await ns.acall("greet", {"name": "B"}) == "hello B"


ESCAPES = [
    "__class__",
    "__init__",
    "__dict__",
    "__globals__",
    "greet.__globals__",
    "greet.__code__",
    "greet.__class__.__bases__",
    "add.__self__",
    "add.__func__.__globals__",
    "__builtins__",
    "__import__",
    "eval",
    "exec",
    "open",
    "getattr",
    "os.system",
    "os",
    "sys.modules",
    "_reset",
    "__secret__",
    "tools",
    "_tools",
    "call",
    "greet ",
    " greet",
    "GREET",
    "greet()",
    "greet;os.system('x')",
    "",
]


@pytest.mark.parametrize("name", ESCAPES)
def test_escape_attempts_are_unknown(ns: Namespace, name: str) -> None:
    with pytest.raises(UnknownToolError) as info:
        call(ns, name, {})
    assert "available: greet, add, size, length" in str(info.value)
    assert name not in ns


@pytest.mark.parametrize("name", [None, 1, ("greet",), b"greet", ["greet"]])
def test_non_string_names_are_unknown(ns: Namespace, name: object) -> None:
    with pytest.raises(UnknownToolError):
        call(ns, name, {})  # type: ignore[arg-type]


def test_str_subclass_cannot_sneak_past_lookup(ns: Namespace) -> None:
    class Sneaky(str):
        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return hash("greet")

    with pytest.raises(UnknownToolError):
        call(ns, Sneaky("os.system"), {})


def test_arguments_cannot_smuggle_extra_parameters(ns: Namespace) -> None:
    with pytest.raises(ToolArgumentError, match="__class__"):
        call(ns, "greet", {"name": "x", "__class__": "y"})


def test_namespace_is_read_only(ns: Namespace) -> None:
    with pytest.raises(TypeError):
        ns["evil"] = Tool.from_function(greet)  # type: ignore[index]
    with pytest.raises(TypeError):
        ns._tools["evil"] = Tool.from_function(greet)  # type: ignore[index]


def test_modules_contribute_only_their_own_public_functions() -> None:
    mod = types.ModuleType("fake_tools")
    exec(
        "import os\nfrom os.path import join\n"
        "def visible(a: int) -> int:\n    return a\n"
        "def _hidden(a: int) -> int:\n    return a\n",
        mod.__dict__,
    )
    ns = namespace(mod)
    assert list(ns) == ["visible"]
    with pytest.raises(UnknownToolError):
        call(ns, "join", {})


def test_registration_errors() -> None:
    def _private(a: int) -> int:
        return a

    with pytest.raises(ToolDefinitionError, match="private"):
        namespace(_private)
    with pytest.raises(ToolDefinitionError, match="two tools"):
        namespace(greet, greet)
    with pytest.raises(ToolDefinitionError, match="no public methods"):
        namespace(object())
    namespace(namespace(greet), Tool.from_function(greet, name="greet2"))
