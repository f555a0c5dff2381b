"""What the log keeps of a `map --batch` run's provider batches (table `map_batches`, migration 8)
and of the run writing each output file (`map_runs`, any logged run: a resume finds its rows'
chains by it): only map reads or writes them, through `Store.write` and `Store.read`.

A batch is written twice: its intent (the custom_ids it will carry) before it is submitted, then
the provider's batch id right after. A resumed run reads them back: a custom_id in a stored batch
is polled there, never submitted again; an intent without a batch id is looked for at the
provider (by its intent id in the batch's metadata, or for Anthropic by its size and time, see
`clients/_anthropic_batch.py`) before it is submitted; a batch found so is logged `adopted` (on
trial) until its results are read, whoever found it (`adopt`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from chainform.clients._openai_batch import Intent
from chainform.store import Store, new_id

ADOPTED = "adopted"
"""The status of a logged batch found at the provider by its intent (its id never reached the log):
on trial, kept so in the log until its results are read (then the provider's status, or FOREIGN),
so a resumed run makes the trial whoever found it (a run, `map status`, `map cancel`)."""
FOREIGN = "foreign"
"""The status of a logged batch whose results named none of its run's custom_ids."""


@dataclass
class StoredBatch:
    """One provider batch of a map run, as the log holds it."""

    id: str  # chainform's intent id (sent as the batch's metadata)
    run_id: str
    provider: str
    round: int
    custom_ids: list[str]
    batch_id: str | None = None
    status: str = "intent"
    created_at: float = 0.0  # when the intent was written (epoch seconds)


def record_intent(
    store: Store, run_id: str, provider: str, round_: int, custom_ids: list[str]
) -> StoredBatch:
    """Write the intent to submit `custom_ids` as one batch; before anything is sent."""
    batch = StoredBatch(new_id(), run_id, provider, round_, list(custom_ids), created_at=time.time())
    store.write(
        lambda db: db.execute(
            "INSERT INTO map_batches (id, run_id, provider, round, custom_ids, created_at) VALUES (?,?,?,?,?,?)",
            (batch.id, run_id, provider, round_, json.dumps(batch.custom_ids), batch.created_at),
        )
    )
    return batch


def record_status(store: Store, batch: StoredBatch) -> None:
    """Store the provider's batch id and the batch's last known status."""
    store.write(
        lambda db: db.execute(
            "UPDATE map_batches SET batch_id = ?, status = ? WHERE id = ?",
            (batch.batch_id, batch.status, batch.id),
        )
    )


def batches_of(store: Store, run_id: str) -> list[StoredBatch]:
    """A run's batches, oldest first (empty for a run that never used a batch API)."""
    with store.read() as db:
        rows = db.execute(
            "SELECT id, run_id, provider, round, custom_ids, batch_id, status, created_at FROM map_batches "
            "WHERE run_id = ? ORDER BY created_at, rowid",
            (run_id,),
        ).fetchall()
    return [StoredBatch(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5], r[6], r[7]) for r in rows]


def known_batch_ids(store: Store, provider: str) -> frozenset[str]:
    """Every batch id the log names for `provider`, over all runs."""
    with store.read() as db:
        rows = db.execute(
            "SELECT batch_id FROM map_batches WHERE provider = ? AND batch_id IS NOT NULL", (provider,)
        ).fetchall()
    return frozenset(str(r[0]) for r in rows)


def intent_of(store: Store, provider: str, stored: StoredBatch) -> Intent:
    """What the provider is asked to recognise a batch by, when its id never reached the log (a
    resumed run, and `map status`/`map cancel`)."""
    return Intent(stored.id, len(stored.custom_ids), stored.created_at, known_batch_ids(store, provider))


async def adopt(store: Store, api: Any, stored: StoredBatch) -> bool:
    """Whether the batch of `stored`, an intent whose batch id never reached the log, is found at
    the provider (`api.find`, by `intent_of`); a batch found is logged ADOPTED: on trial until its
    results are read (`_batch.BatchRounds._answer`). The one way a run, `map status` and `map
    cancel` take such a batch."""
    found = await api.find(intent_of(store, api.provider, stored))
    if found is None:
        return False
    stored.batch_id, stored.status = found, ADOPTED
    record_status(store, stored)
    return True


def record_run(store: Store, output: str, run_id: str) -> None:
    """The run id of the logged run (a batch run or not) writing `output` (an absolute path): a
    resume finds its batches and its rows' chains through it, even before the file holds a row."""
    store.write(
        lambda db: db.execute(
            "INSERT OR REPLACE INTO map_runs (output, run_id, created_at) VALUES (?,?,?)",
            (output, run_id, time.time()),
        )
    )


def run_of(store: Store, output: str) -> str | None:
    """The run id last recorded for `output`, if any."""
    with store.read() as db:
        row = db.execute("SELECT run_id FROM map_runs WHERE output = ?", (output,)).fetchone()
    return str(row[0]) if row else None


__all__ = [
    "ADOPTED",
    "FOREIGN",
    "StoredBatch",
    "adopt",
    "batches_of",
    "intent_of",
    "known_batch_ids",
    "record_intent",
    "record_run",
    "record_status",
    "run_of",
]
