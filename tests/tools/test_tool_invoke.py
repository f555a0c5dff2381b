"""Tool: validation and conversion of the model's arguments, sync/async calls, Toolbox."""

import asyncio
import datetime
import enum
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from chainform.errors import ToolArgumentError, ToolDefinitionError
from chainform.tools import Tool, Toolbox

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


class Mode(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


@dataclass
class Window:
    start: datetime.date
    end: datetime.date


class Owner:
    def __init__(self, name: str, pets: "list[Owner]") -> None:
        self.name, self.pets = name, pets


class Query(BaseModel):
    text: str
    limit: int = 10


def search(
    root: Path, mode: Mode, window: Window, query: Query, owner: Owner, at: datetime.datetime, tags: set[str]
) -> dict[str, Any]:
    return {
        "root": root,
        "mode": mode,
        "window": window,
        "query": query,
        "owner": owner,
        "at": at,
        "tags": tags,
    }


GOOD = {
    "root": "/data",
    "mode": "fast",
    "window": {"start": "2024-01-01", "end": "2024-02-01"},
    "query": {"text": "cats"},
    "owner": {"name": "Ann", "pets": [{"name": "Bob", "pets": []}]},
    "at": "2024-05-06T07:08:09Z",
    "tags": ["a", "b", "a"],
}


def test_arguments_are_converted_to_annotated_types() -> None:
    tool = Tool.from_function(search)
    out = tool.invoke(GOOD)
    assert out["root"] == Path("/data")
    assert out["mode"] is Mode.FAST
    assert out["window"] == Window(datetime.date(2024, 1, 1), datetime.date(2024, 2, 1))
    assert out["query"] == Query(text="cats", limit=10)
    assert isinstance(out["owner"], Owner) and isinstance(out["owner"].pets[0], Owner)
    assert out["owner"].pets[0].name == "Bob"
    assert out["at"] == datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)
    assert out["tags"] == {"a", "b"}
    assert tool.invoke(__import__("json").dumps(GOOD))["mode"] is Mode.FAST


def test_each_bad_field_is_named() -> None:
    tool = Tool.from_function(search)
    bad = {**GOOD, "mode": "warp", "window": {"start": "soon"}, "surprise": 1}
    del bad["root"]
    with pytest.raises(ToolArgumentError) as info:
        tool.invoke(bad)
    err = info.value
    assert err.tool == "search"
    joined = "\n".join(err.errors)
    assert len(err.errors) == 5, joined
    for needle in (
        "root: Field required",
        "mode: Input should be 'fast' or 'slow'",
        "window.start",
        "window.end",
        "surprise",
    ):
        assert needle in joined
    assert "warp" in str(err)


def test_nested_list_error_location() -> None:
    tool = Tool.from_function(search)
    with pytest.raises(ToolArgumentError, match=r"owner\.pets\[0\]\.name"):
        tool.invoke({**GOOD, "owner": {"name": "a", "pets": [{"pets": []}]}})


def test_not_an_object() -> None:
    tool = Tool.from_function(search)
    with pytest.raises(ToolArgumentError, match="arguments"):
        tool.invoke([1, 2])  # type: ignore[arg-type]
    with pytest.raises(ToolArgumentError, match="arguments"):
        tool.invoke("[1, 2]")
    with pytest.raises(ToolArgumentError):
        tool.invoke("{not json")


def test_positional_only_keyword_only_and_defaults() -> None:
    def f(a: int, /, b: int = 2, *, c: int = 3) -> tuple[int, int, int]:
        return (a, b, c)

    tool = Tool.from_function(f)
    assert tool.invoke({"a": 1}) == (1, 2, 3)
    assert tool.invoke({"a": 1, "b": 5, "c": 6}) == (1, 5, 6)
    assert tool.invoke({"a": "7"}) == (7, 2, 3)  # lax conversion, as pydantic does


def test_awkward_parameter_names() -> None:
    def f(model_config: int, _x: int = 0, json: str = "") -> int:
        return model_config + _x

    tool = Tool.from_function(f)
    assert set(tool.parameters["properties"]) == {"model_config", "_x", "json"}
    assert tool.invoke({"model_config": 1, "_x": 2}) == 3


def test_name_and_description_overrides() -> None:
    def f(a: int) -> int:
        "Original."
        return a

    tool = Tool.from_function(f, name="renamed", description="New text.")
    assert (tool.name, tool.description, tool.fn) == ("renamed", "New text.", f)
    assert tool.schema()["name"] == "renamed"
    assert tool(4) == 4
    with pytest.raises(ToolDefinitionError, match="name"):
        Tool.from_function(lambda: None)  # "<lambda>" is not a valid tool name
    assert Tool.from_function(lambda: 1, name="one").invoke({}) == 1


def test_unbound_method_needs_an_instance() -> None:
    class C:
        def m(self, a: int) -> int:
            return a

    with pytest.raises(ToolDefinitionError, match="unbound"):
        Tool.from_function(C.m)
    assert Tool.from_function(C().m).invoke({"a": 1}) == 1


def test_class_and_model_tools_build_instances() -> None:
    assert Tool.from_function(Window).invoke({"start": "2024-01-01", "end": "2024-01-02"}) == Window(
        datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)
    )
    assert Tool.from_function(Query).invoke({"text": "x"}) == Query(text="x")
    with pytest.raises(ToolArgumentError, match="limit"):
        Tool.from_function(Query).invoke({"text": "x", "limit": "many"})


async def test_async_tool_and_sync_tool_in_thread() -> None:
    async def double(n: int) -> int:
        await asyncio.sleep(0)
        return n * 2

    seen: list[str] = []

    def where(n: int) -> int:
        seen.append(threading.current_thread().name)
        return n

    atool, stool = Tool.from_function(double), Tool.from_function(where)
    assert atool.is_async and not stool.is_async
    assert await atool.ainvoke({"n": "4"}) == 8
    assert await stool.ainvoke({"n": 1}) == 1
    assert seen and seen[0] != threading.current_thread().name
    # invoke() of an async tool works even while a loop runs in this thread
    assert atool.invoke({"n": 2}) == 4
    with pytest.raises(ToolArgumentError):
        await atool.ainvoke({"n": "x"})


def test_async_tool_invoke_without_loop() -> None:
    async def double(n: int) -> int:
        return n * 2

    assert Tool.from_function(double).invoke({"n": 3}) == 6


class Notes(Toolbox):
    """Notes kept in memory."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def add(self, text: str) -> int:
        """Add a note; returns how many there are."""
        self.notes.append(text)
        return len(self.notes)

    def list_notes(self) -> list[str]:
        """All notes."""
        return list(self.notes)

    @staticmethod
    def shout(text: str) -> str:
        return text.upper()

    def _private(self) -> None: ...

    @property
    def count(self) -> int:
        return len(self.notes)


class MoreNotes(Notes):
    def add(self, text: str) -> int:
        return super().add(text + "!")

    def clear(self) -> None:
        self.notes.clear()


def test_toolbox_methods_share_state() -> None:
    box = Notes()
    tools = {t.name: t for t in box.tools()}
    assert list(tools) == ["add", "list_notes", "shout"]
    assert tools["add"].invoke({"text": "a"}) == 1
    assert tools["add"].invoke({"text": "b"}) == 2
    assert tools["list_notes"].invoke({}) == ["a", "b"]
    assert tools["shout"].invoke({"text": "x"}) == "X"
    assert box.notes == ["a", "b"]
    assert Notes().tools()[1].invoke({}) == []


def test_toolbox_inheritance_uses_overrides() -> None:
    box = MoreNotes()
    tools = {t.name: t for t in box.tools()}
    assert list(tools) == ["add", "list_notes", "shout", "clear"]
    tools["add"].invoke({"text": "a"})
    assert box.notes == ["a!"]
    tools["clear"].invoke({})
    assert box.notes == []


def test_callable_object_tool() -> None:
    class Scale:
        def __init__(self, k: int) -> None:
            self.k = k

        def __call__(self, x: float) -> float:
            return x * self.k

    tool = Tool.from_function(Scale(3), name="scale")
    assert tool.parameters["properties"] == {"x": {"type": "number"}}
    assert tool.invoke({"x": 2}) == 6
