"""A damaged log file: found when it is opened, reported with the way on, never half-used.

A page that went bad (a disk fault, a copy taken mid-write, a stray write) is not noticed by
SQLite until a statement reads it; a chain whose journal row lands on good pages would seem logged
while every later read failed. `PRAGMA quick_check` on open finds it first (it reads every page:
docs/benchmarks.md says what that costs).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from chainform.store._records import StoreError


class LogDamagedError(StoreError):
    """The log database has damaged pages; the message says how to keep what it holds."""

    def __init__(self, path: Path, detail: str) -> None:
        self.path = path
        super().__init__(
            f"the log at {path} is damaged ({detail}); keep what it holds with `chainform logs backup "
            "FILE`, then move it aside (a fresh log is created)"
        )


def check_intact(db: sqlite3.Connection, path: Path) -> None:
    """Raise LogDamagedError unless the file passes `PRAGMA quick_check`."""
    try:
        problems = [row[0] for row in db.execute("PRAGMA quick_check(3)").fetchall()]
    except sqlite3.DatabaseError as exc:
        raise LogDamagedError(path, str(exc)) from None
    if problems != ["ok"]:
        raise LogDamagedError(path, "; ".join(problems))


def as_store_error(exc: sqlite3.Error, path: Path, doing: str) -> StoreError:
    """A SQLite error met while using the log: a damaged file says so (and the way on)."""
    if isinstance(exc, sqlite3.DatabaseError) and "malformed" in str(exc):
        return LogDamagedError(path, str(exc))
    return StoreError(f"{doing} ({path}): {exc}")
