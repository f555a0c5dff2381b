"""The bounds of the counts the Python API and the CLI share, and the one check of them.

A count that is spent as memory or work (a worker per row in flight, a run per row) has an upper
bound as well as a lower one. The CLI's flags (`--concurrency`, `--repeat`) and the API's keyword
arguments (`concurrency=`, `repeat=`) read the same constants here, so the two never disagree.
"""

from __future__ import annotations

from typing import Any

from chainform.errors import ArgumentRangeError

MAX_CONCURRENCY = 1_000
"""The most rows in flight at once (`concurrency=`, `--concurrency`): each is a worker."""
MAX_REPEAT = 1_000
"""The most runs of each eval row (`repeat=`, `--repeat`): each is a chain, kept in the report."""


def check_count(
    name: str, value: Any, minimum: int, maximum: int, error: type[ValueError] = ArgumentRangeError
) -> int:
    """`value` when it is a whole number from `minimum` to `maximum`; else `error` naming `name`,
    the value and the range (a bool is not a count)."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise error(f"{name}={value!r}: give a whole number from {minimum} to {maximum:,}")
    return value


__all__ = ["MAX_CONCURRENCY", "MAX_REPEAT", "check_count"]
