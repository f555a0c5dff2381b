"""`logs repair` never loses what an earlier repair kept: each repair's damaged files get a name
of their own, even within the same second."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest
from store_helpers import make_record

from chainform.store import Store
from chainform.store._repair import repair

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def _texts(path: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return [row[0] for row in db.execute("SELECT text FROM responses ORDER BY text")]


def test_two_repairs_in_one_second_keep_both_originals(home: Path) -> None:
    path = home / "logs.db"
    with Store(path) as store:
        store.write_calls([make_record(text="first")])
    first = repair(path, force=True, now=1_000_000.0)
    with Store(path) as store:
        store.write_calls([make_record(text="second")])
    second = repair(path, force=True, now=1_000_000.0)  # the same stamp: was renamed over the first's
    assert first.kept[0] != second.kept[0]
    assert _texts(first.kept[0]) == ["first"]
    assert _texts(second.kept[0]) == ["first", "second"]
    assert _texts(path) == ["first", "second"]
