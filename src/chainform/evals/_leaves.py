"""How two scalar values compare, one function per kind of leaf a JSON Schema can declare.

Each comparer is built once per field (`leaf_comparer`) and then called per row, so the work that
depends only on the schema (which kind, which tolerance, which date format) is done once. They are
pure: `(expected, actual) -> bool`, both values already known to be present and not null.
"""

from __future__ import annotations

import datetime as dt
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Compare = Callable[[Any, Any], bool]


def normalise(text: str) -> str:
    """Unicode NFKC, case folded, runs of whitespace made one space, trimmed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def exact(expected: Any, actual: Any) -> bool:
    """Equal, and of the same JSON kind all the way down (`true` is not `1`, nor `[true]` `[1]`;
    `3` and `3.0` are the same number)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, dict) or isinstance(actual, dict):
        return (
            isinstance(expected, dict)
            and isinstance(actual, dict)
            and expected.keys() == actual.keys()
            and all(exact(value, actual[key]) for key, value in expected.items())
        )
    if isinstance(expected, list) or isinstance(actual, list):
        return (
            isinstance(expected, list)
            and isinstance(actual, list)
            and len(expected) == len(actual)
            and all(map(exact, expected, actual))
        )
    return bool(expected == actual)


@dataclass(frozen=True)
class Tolerance:
    """How far a number may be from the expected one and still be right: within `relative` of it
    (`|answer - expected| <= relative * |expected|`) or within `absolute` (`|answer - expected| <=
    absolute`), whichever allows more; both 0: exact."""

    relative: float = 0.0
    absolute: float = 0.0

    @classmethod
    def parse(cls, value: float | str | Tolerance) -> Tolerance:
        """`0.01` or `"0.01"` (relative), `"abs:0.01"` or `"rel:0.01"`; ValueError otherwise (a
        number below 0, NaN or infinite too)."""
        if isinstance(value, Tolerance):
            found = value
        elif isinstance(value, str):
            kind, sep, number = value.strip().rpartition(":")
            if kind not in ("", "rel", "abs") or (sep and not kind):
                raise ValueError(f"{value!r}: give REL, rel:REL or abs:ABS, e.g. 0.01 or abs:0.5")
            amount = float(number)
            found = cls(absolute=amount) if kind == "abs" else cls(relative=amount)
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{value!r} is not a tolerance (a number, or 'abs:0.01')")
        else:
            found = cls(relative=float(value))
        for amount in (found.relative, found.absolute):
            if not 0 <= amount < float("inf"):
                raise ValueError(f"{value!r} is not a number >= 0")
        return found

    def __or__(self, other: Tolerance) -> Tolerance:
        """Both allowances: a number within either is right."""
        return Tolerance(max(self.relative, other.relative), max(self.absolute, other.absolute))

    def to_json(self) -> float | str:
        """The relative number when there is no absolute part (`0.01`), else the text (`abs:0.5`)."""
        return self.relative if not self.absolute else str(self)

    def __str__(self) -> str:
        parts = [f"{self.relative:g}"] if self.relative or not self.absolute else []
        return "+".join(parts + ([f"abs:{self.absolute:g}"] if self.absolute else []))


def number(tolerance: Tolerance) -> Compare:
    """Within `tolerance` of the expected value (relative to it, or absolute)."""

    def compare(expected: Any, actual: Any) -> bool:
        if isinstance(actual, bool) or not isinstance(actual, int | float):
            return False
        if actual == expected:
            return True
        gap = abs(actual - expected)
        return bool(gap <= tolerance.absolute or gap <= tolerance.relative * abs(expected))

    return compare


def string(fuzzy: float | None) -> Compare:
    """Equal once normalised; with `fuzzy` (0..1), a rapidfuzz ratio of at least that counts too."""
    ratio = _ratio() if fuzzy is not None else None

    def compare(expected: Any, actual: Any) -> bool:
        if not isinstance(actual, str) or not isinstance(expected, str):
            return exact(expected, actual)
        left, right = normalise(expected), normalise(actual)
        if left == right:
            return True
        return ratio is not None and fuzzy is not None and ratio(left, right) / 100 >= fuzzy

    return compare


def _ratio() -> Callable[[str, str], float]:
    try:
        from rapidfuzz.fuzz import ratio
    except ImportError:
        from chainform.evals._errors import EvalInputError

        raise EvalInputError(
            "a fuzzy string threshold needs rapidfuzz: pip install 'chainform[evals]'"
        ) from None
    return ratio  # type: ignore[no-any-return]


def _date_time(text: str) -> dt.datetime:
    parsed = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.timezone.utc)


def _time(text: str) -> dt.time:
    """The time of day in UTC (an offset applied, wrapping past midnight; no zone read as UTC)."""
    parsed = dt.time.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    offset = parsed.utcoffset()
    plain = parsed.replace(tzinfo=None)
    if not offset:
        return plain
    return (dt.datetime.combine(dt.date(2000, 1, 2), plain) - offset).time()


_PARSERS: dict[str, Callable[[str], Any]] = {
    "date": lambda text: dt.date.fromisoformat(text.strip()),
    "date-time": _date_time,
    "time": _time,
}


def temporal(fmt: str, fallback: Compare) -> Compare:
    """The same instant (date-time: a time zone's offset applied; no zone read as UTC), day or
    time of day, parsed by the schema's `format`; text that does not parse compares as `fallback`."""
    parse = _PARSERS[fmt]

    def compare(expected: Any, actual: Any) -> bool:
        try:
            return bool(parse(expected) == parse(actual))
        except (TypeError, ValueError, AttributeError):
            return fallback(expected, actual)

    return compare


TEMPORAL_FORMATS = frozenset(_PARSERS)


__all__ = ["TEMPORAL_FORMATS", "Compare", "Tolerance", "exact", "normalise", "number", "string", "temporal"]
