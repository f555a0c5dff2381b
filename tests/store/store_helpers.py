"""A CallRecord factory shared by the log tests (a uniquely named module, importable from tests)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from chainform.store import CallRecord
from chainform.store._migrations import migrate
from chainform.types import Message, UsageDetails


def make_record(**overrides: Any) -> CallRecord:
    values: dict[str, Any] = dict(
        conversation_id="conv1",
        chain_id="chain1",
        seq=0,
        purpose="chain",
        model="scripted",
        prompt="What is the capital of France?",
        system="Be brief.",
        messages=[Message.system("Be brief."), Message.user("What is the capital of France?")],
        options={"temperature": 0.2},
        schema=None,
        strategy=None,
        text="Paris",
        parsed=None,
        usage=UsageDetails(input_tokens=7, output_tokens=1),
        duration_ms=12.5,
        created_at=time.time(),
    )
    values.update(overrides)
    return CallRecord(**values)


def old_log(path: Path, version: int) -> sqlite3.Connection:
    """A log as the migrations up to `version` made it, in an open transaction that already holds
    conversation 'c1' (model 'old-model'): the caller adds its rows, then commits."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN")
    migrate(db, upto=version)
    db.execute("INSERT INTO conversations VALUES ('c1', 'old-model', NULL, ?)", (time.time(),))
    return db
