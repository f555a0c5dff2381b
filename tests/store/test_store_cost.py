"""Each call's cost in the log: written and read back exactly, and a log (or an old journal row)
from before costs were logged read with no cost."""

from __future__ import annotations

import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic_core import to_json
from store_helpers import make_record

import chainform as cf
from chainform.store import Store
from chainform.store._migrations import migrate
from chainform.store._rows import rows_of
from chainform.testing import ScriptedClient
from chainform.types import UsageDetails

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def test_costs_round_trip_exactly(store: Store) -> None:
    record = make_record(seq=1)
    record.usage = UsageDetails(10, 2, cost=Decimal("0.0000123456789"))
    store.write_calls([record])
    store.write_calls([make_record(seq=2, usage=None)])  # unpriced: NULL, read back as unknown
    rows = {r.seq: r for r in store.recent(None)}
    assert rows[1].usage is not None and rows[1].usage.cost == Decimal("0.0000123456789")
    assert rows[2].usage is None or rows[2].usage.cost is None


def test_a_sync_chains_rows_keep_each_calls_cost() -> None:
    chain = cf.Model(ScriptedClient(["one two three"]), name="openai/gpt-4.1-mini").chain("hi")
    assert chain.text() == "one two three"
    with Store() as store:
        (row,) = store.recent(None)
    assert row.usage is not None and row.usage.cost == chain.usage.cost is not None


def test_a_log_and_a_journal_row_from_before_costs_are_read_with_no_cost(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN")
    migrate(db, upto=6)  # the log as it was before the cost column (migration 7)
    rows = rows_of([make_record(seq=0)])
    rows["responses"] = [params[:-1] for params in rows["responses"]]  # a format-1 row had no cost
    db.execute("INSERT INTO journal (format, rows) VALUES (1, ?)", (to_json(rows).decode(),))
    db.execute("COMMIT")
    db.close()
    with Store(path) as store:
        (row,) = store.recent(None)
    assert row.seq == 0 and (row.usage is None or row.usage.cost is None)
    with sqlite3.connect(path) as db:  # the old journal was drained once
        assert db.execute("SELECT count(*) FROM journal").fetchone() == (0,)
