"""Where descriptions come from, and callables of every shape (this module uses string annotations)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, NamedTuple

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from chainform.tools import get_schema

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def props(obj: object) -> dict[str, dict[str, object]]:
    return get_schema(obj)["parameters"]["properties"]  # type: ignore[no-any-return]


def get_weather(
    city: str,  # City name, e.g. "Paris"
    # Temperature unit
    unit: str = "C",
    days: int = 1,  # How many days
) -> dict[str, float]:  # Temperatures by day
    "Current weather for a city."
    return {}


def test_comments() -> None:
    schema = get_schema(get_weather)
    assert schema["name"] == "get_weather"
    assert (
        schema["description"]
        == "Current weather for a city.\n\nReturns dict[str, float]: Temperatures by day"
    )
    p = schema["parameters"]["properties"]
    assert p["city"]["description"] == 'City name, e.g. "Paris"'
    assert p["unit"]["description"] == "Temperature unit"
    assert p["days"] == {"type": "integer", "default": 1, "description": "How many days"}


def google(a: int, b: list[str]) -> int:
    """Add things up.

    Longer explanation.

    Args:
        a (int): The first
            number.
        b: Some words.

    Returns:
        int: The total.

    Raises:
        ValueError: never.
    """
    return a


def numpy_style(a: int, b: str) -> str:
    """Join things.

    Parameters
    ----------
    a : int
        The count.
    b : str
        The text,
        continued.

    Returns
    -------
    str
        The joined text.
    """
    return b


def sphinx(a: int, b: str) -> bool:
    """Check things.

    :param a: The count.
    :param str b: The text.
    :type a: int
    :returns: Whether it holds.
    :rtype: bool
    """
    return True


def test_google_docstring() -> None:
    schema = get_schema(google)
    assert schema["description"] == "Add things up.\n\nLonger explanation.\n\nReturns int: The total."
    assert props(google)["a"]["description"] == "The first number."
    assert props(google)["b"]["description"] == "Some words."


def test_numpy_docstring() -> None:
    assert get_schema(numpy_style)["description"] == "Join things.\n\nReturns str: The joined text."
    assert props(numpy_style)["a"]["description"] == "The count."
    assert props(numpy_style)["b"]["description"] == "The text, continued."


def test_sphinx_docstring() -> None:
    assert get_schema(sphinx)["description"] == "Check things.\n\nReturns bool: Whether it holds."
    assert props(sphinx)["a"]["description"] == "The count."
    assert props(sphinx)["b"]["description"] == "The text."


def keyword_and_shared(x: int, y: int, *, flag: bool = False) -> None:
    """Google's keyword section and NumPy's shared entry, read by docstring-parser.

    Keyword Args:
        flag: Turn it on.
    """


def numpy_shared(x: int, y: int) -> None:
    """Add.

    Parameters
    ----------
    x, y : int
        The numbers.
    """


def test_keyword_section_and_shared_numpy_entry() -> None:
    assert props(keyword_and_shared)["flag"]["description"] == "Turn it on."
    assert get_schema(keyword_and_shared)["description"].startswith("Google's keyword section")
    assert (
        props(numpy_shared)["x"]["description"] == props(numpy_shared)["y"]["description"] == "The numbers."
    )


def precedence(
    a: Annotated[int, "from annotated"],  # from comment
    b: Annotated[int, Field(description="from field")],  # from comment
    c: int = Field(3, description="from default field"),  # from comment
    d: int = 0,  # from comment
    e: int = 0,
) -> None:
    """Precedence.

    Args:
        a: from doc
        d: from doc
        e: from doc
    """


def test_precedence_explicit_then_comment_then_docstring() -> None:
    p = props(precedence)
    assert p["a"]["description"] == "from annotated"
    assert p["b"]["description"] == "from field"
    assert p["c"] == {"type": "integer", "default": 3, "description": "from default field"}
    assert p["d"]["description"] == "from comment"
    assert p["e"]["description"] == "from doc"
    assert "Returns" not in get_schema(precedence)["description"]


def test_field_constraints_kept() -> None:
    def f(n: Annotated[int, Field(ge=1, le=5)], s: str = Field("x", max_length=3)) -> None: ...

    p = props(f)
    assert p["n"] == {"type": "integer", "minimum": 1, "maximum": 5}
    assert p["s"] == {"type": "string", "default": "x", "maxLength": 3}


@dataclass
class Address:
    """A postal address."""

    street: str  # Street and number
    city: str = "Paris"  # City


class Person(BaseModel):
    """A person."""

    name: str = Field(description="Full name")
    age: int  # Age in years
    home: Address | None = None


class Point(NamedTuple):
    x: float  # Horizontal
    y: float = 0.0


class Movie(TypedDict):
    title: str  # The title


class Service:
    """A service."""

    def __init__(self, url: str) -> None:  # not a parameter description
        """Make one.

        Args:
            url: Where it lives.
        """
        self.url = url

    def fetch(self, path: str, retries: int = 2) -> str:  # The body
        """Fetch a path."""
        return path

    @staticmethod
    def parse(text: str) -> int:
        """Parse text."""
        return len(text)

    @classmethod
    def named(cls, name: str) -> Service:
        return cls(name)

    async def afetch(self, path: str) -> str:
        return path


def test_nested_dataclass_comments_and_docstring_in_defs() -> None:
    def send(to: Address) -> None: ...

    defs = get_schema(send)["parameters"]["$defs"]
    assert defs["Address"]["description"] == "A postal address."
    assert defs["Address"]["properties"]["street"] == {"type": "string", "description": "Street and number"}
    assert defs["Address"]["properties"]["city"] == {
        "type": "string",
        "default": "Paris",
        "description": "City",
    }


def test_classes_as_tools() -> None:
    person = get_schema(Person)
    assert person["name"] == "Person"
    assert person["description"] == "A person."
    pp = person["parameters"]["properties"]
    assert pp["name"]["description"] == "Full name"
    assert pp["age"] == {"type": "integer", "description": "Age in years"}
    assert pp["home"]["anyOf"][0] == {"$ref": "#/$defs/Address"}
    assert person["parameters"]["required"] == ["name", "age"]

    assert props(Address)["street"]["description"] == "Street and number"
    assert get_schema(Address)["description"] == "A postal address."
    assert props(Point) == {
        "x": {"type": "number", "description": "Horizontal"},
        "y": {"type": "number", "default": 0.0},
    }
    assert get_schema(Point)["description"] == ""
    assert props(Movie) == {"title": {"type": "string", "description": "The title"}}
    assert get_schema(Movie)["description"] == ""

    service = get_schema(Service)
    assert service["parameters"]["properties"] == {
        "url": {"type": "string", "description": "Where it lives."}
    }
    assert service["description"] == "A service."


def test_methods_drop_self_and_cls() -> None:
    bound = get_schema(Service("u").fetch)
    unbound = get_schema(Service.fetch)
    assert bound == unbound
    assert bound["name"] == "fetch"
    assert bound["description"] == "Fetch a path.\n\nReturns str: The body"
    assert bound["parameters"]["required"] == ["path"]
    assert list(props(Service.parse)) == ["text"]
    assert list(props(Service.__dict__["parse"])) == ["text"]
    assert list(props(Service.named)) == ["name"]
    assert list(props(Service.__dict__["named"])) == ["name"]
    assert list(props(Service.afetch)) == ["path"]


def test_string_annotations_resolve_from_module() -> None:
    def use(people: list[Person], p: Point | None = None) -> None: ...

    params = get_schema(use)["parameters"]
    assert set(params["$defs"]) == {"Address", "Person", "Point"}
    assert params["properties"]["people"] == {"type": "array", "items": {"$ref": "#/$defs/Person"}}
