"""get_schema: every supported type, compared with pydantic's own schema on the same instances."""

import datetime
import decimal
import enum
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, Optional, Union

import jsonschema
import pytest
from pydantic import BaseModel, Field, TypeAdapter
from typing_extensions import NotRequired, TypedDict

from chainform.errors import ToolDefinitionError
from chainform.tools import get_schema

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclass
class Point:
    x: float
    y: float = 0.0


class Pet(BaseModel):
    name: str
    age: int = Field(ge=0)


class Movie(TypedDict):
    title: str
    year: int
    rating: NotRequired[float]


class Pair(NamedTuple):
    left: int
    right: str


@dataclass
class Tree:
    value: int
    children: "list[Tree]" = field(default_factory=list)


class Category(BaseModel):
    name: str
    parent: Optional["Category"] = None


def one_param(tp: Any) -> Any:
    def fn(x):  # type: ignore[no-untyped-def]
        return x

    fn.__annotations__ = {"x": tp}
    return fn


# (type, instances that must be accepted, instances that must be rejected)
CASES: list[tuple[Any, list[Any], list[Any]]] = [
    (int, [0, -3], [1.5, "1", None, True is None]),
    (float, [1.5, 2], ["x", None]),
    (str, ["", "a"], [1, None]),
    (bool, [True, False], [0, "true"]),
    (type(None), [None], [0, ""]),
    (list[int], [[], [1, 2]], [[1.5], "12", {"a": 1}]),
    (Sequence[str], [["a"]], [[1]]),
    (tuple[int, str], [[1, "a"]], [[1], [1, "a", 2], ["a", 1]]),
    (tuple[float, ...], [[], [1, 2.5]], [["x"]]),
    (set[int], [[1, 2]], [[1, 1]]),
    (frozenset[str], [["a", "b"]], [["a", "a"]]),
    (dict[str, int], [{}, {"a": 1}], [{"a": "x"}, [1]]),
    (Optional[int], [None, 3], ["3"]),
    (Union[int, str], [1, "a"], [None, 1.5]),
    (int | None, [None, 1], ["a"]),
    (Literal["a", "b"], ["a"], ["c"]),
    (Literal[3], [3], [4]),
    (Color, ["red"], ["RED", "blue"]),
    (Level, [1, 2], [3]),
    (Path, ["/tmp/x"], [1]),
    (datetime.datetime, ["2024-01-02T03:04:05Z"], [3]),
    (datetime.date, ["2024-01-02"], [3]),
    (datetime.time, ["10:20:30"], [3]),
    (uuid.UUID, ["12345678-1234-5678-1234-567812345678"], [3]),
    (decimal.Decimal, ["1.5", 2], [[]]),
    (Point, [{"x": 1}, {"x": 1, "y": 2}], [{"y": 1}, {"x": "a"}]),
    (Pet, [{"name": "Rex", "age": 3}], [{"name": "Rex", "age": -1}, {"age": 1}]),
    (Movie, [{"title": "Up", "year": 2009}, {"title": "Up", "year": 1, "rating": 2}], [{"title": "Up"}]),
    (Pair, [[1, "a"]], [[1]]),
    (Tree, [{"value": 1, "children": [{"value": 2}]}], [{"value": 1, "children": [{"value": "x"}]}]),
    (Category, [{"name": "a", "parent": {"name": "b", "parent": None}}], [{"name": "a", "parent": {"x": 1}}]),
    (list[Point], [[{"x": 1}]], [[{"x": None}]]),
    (dict[str, list[Color]], [{"a": ["red"]}], [{"a": ["pink"]}]),
]


@pytest.mark.parametrize(("tp", "good", "bad"), CASES, ids=[str(c[0]) for c in CASES])
def test_same_verdicts_as_pydantic(tp: Any, good: list[Any], bad: list[Any]) -> None:
    ours = get_schema(one_param(tp))["parameters"]
    theirs = TypeAdapter(tp).json_schema()
    jsonschema.Draft202012Validator.check_schema(ours)
    ours_v = jsonschema.Draft202012Validator(ours)
    theirs_v = jsonschema.Draft202012Validator(theirs)
    for value in good:
        assert ours_v.is_valid({"x": value}), value
        assert theirs_v.is_valid(value), value
    for value in bad:
        assert not ours_v.is_valid({"x": value}), value
        assert not theirs_v.is_valid(value), value


def test_type_details() -> None:
    def f(
        a: tuple[int, str],
        b: set[int],
        c: dict[str, float],
        d: Literal["x", "y"],
        e: Path,
        f: datetime.datetime,
        g: uuid.UUID,
        h: Color,
        i: Optional[int] = None,
    ) -> None: ...

    params = get_schema(f)["parameters"]
    props = params["properties"]
    assert props["a"] == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "minItems": 2,
        "maxItems": 2,
    }
    assert props["b"] == {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
    assert props["c"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["d"] == {"type": "string", "enum": ["x", "y"]}
    assert props["e"] == {"type": "string", "format": "path"}
    assert props["f"] == {"type": "string", "format": "date-time"}
    assert props["g"] == {"type": "string", "format": "uuid"}
    assert props["h"] == {"$ref": "#/$defs/Color"}
    assert params["$defs"]["Color"] == {"type": "string", "enum": ["red", "green"]}
    assert props["i"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    assert params["required"] == ["a", "b", "c", "d", "e", "f", "g", "h"]
    assert params["type"] == "object"
    assert "title" not in str(params)


def test_recursive_dataclass_uses_defs_and_ref() -> None:
    params = get_schema(one_param(Tree))["parameters"]
    assert params["properties"]["x"] == {"$ref": "#/$defs/Tree"}
    tree = params["$defs"]["Tree"]
    assert tree["properties"]["children"] == {"type": "array", "items": {"$ref": "#/$defs/Tree"}}
    assert tree["required"] == ["value"]


def test_plain_class_described_from_init() -> None:
    class Box:
        def __init__(self, width: int, label: str = "box") -> None:
            self.width, self.label = width, label

    params = get_schema(one_param(Box))["parameters"]
    box = params["$defs"]["Box"]
    assert box["properties"] == {"width": {"type": "integer"}, "label": {"type": "string", "default": "box"}}
    assert box["required"] == ["width"]


def test_defaults_are_json() -> None:
    def f(
        p: Path = Path("a/b"), c: Color = Color.GREEN, n: tuple[int, int] = (1, 2), s: str = "x"
    ) -> None: ...

    props = get_schema(f)["parameters"]["properties"]
    assert props["p"]["default"] == "a/b"
    assert props["c"]["default"] == "green"
    assert props["n"]["default"] == [1, 2]
    assert props["s"]["default"] == "s"[:0] + "x"
    assert get_schema(f)["parameters"]["required"] == []


def test_no_parameters() -> None:
    def now() -> str:
        "The time."
        return ""

    assert get_schema(now) == {
        "name": "now",
        "description": "The time.\n\nReturns str.",
        "parameters": {"type": "object", "properties": {}, "required": [], "additionalProperties": False},
    }


def test_missing_annotation_names_function_and_parameter() -> None:
    def add(a: int, b) -> int:  # type: ignore[no-untyped-def]
        return a

    with pytest.raises(ToolDefinitionError, match=r"add.*'b'.*no type annotation"):
        get_schema(add)


@pytest.mark.parametrize("sig", ["*args: int", "**kwargs: int"])
def test_star_parameters_rejected(sig: str) -> None:
    ns: dict[str, Any] = {}
    exec(f"def spread(a: int, {sig}) -> None: ...", ns)
    with pytest.raises(ToolDefinitionError, match=r"spread.*\*"):
        get_schema(ns["spread"])


def test_undescribable_type_is_named() -> None:
    from collections.abc import Callable

    def run(cb: Callable[[int], int]) -> None: ...

    with pytest.raises(ToolDefinitionError, match=r"run.*'cb'"):
        get_schema(run)

    class Opaque:
        def __init__(self, *things: Any) -> None: ...

    def use(o: Opaque) -> None: ...

    with pytest.raises(ToolDefinitionError, match=r"Opaque"):
        get_schema(use)


def test_unresolvable_string_annotation() -> None:
    def g(a: "NoSuchType") -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(ToolDefinitionError, match=r"g.*'a'.*NoSuchType"):
        get_schema(g)


def test_not_callable() -> None:
    with pytest.raises(ToolDefinitionError):
        get_schema(42)
