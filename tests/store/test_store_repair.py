"""`chainform logs repair` and the advice that fits each cause (issue 49 item 1): a damaged log's
readable rows, the ones still in its -wal included, go into a new log; the damaged files are kept."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from store_helpers import make_record

from chainform.cli import cli
from chainform.store import Store

FIVE_IN_THE_WAL = """
import os, sys
from chainform.store import CallRecord, Store, new_id
from chainform.types import Message
store = Store(sys.argv[1])
store.check()
with store.read() as db:
    db.execute("PRAGMA wal_autocheckpoint = 0")  # killed before any checkpoint
for n in range(5):
    cid = f"wal-{n}"
    store.write_calls([CallRecord(conversation_id=cid, chain_id=cid, seq=0, purpose="chain", model="m",
                                  prompt="q", messages=[Message.user("q")], text=f"in the wal {n}")])
os._exit(0)  # as kill -9 would leave it: the 5 calls are only in logs.db-wal
"""


def _count(path: Path, where: str = "1") -> int:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return int(db.execute(f"SELECT count(*) FROM responses WHERE {where}").fetchone()[0])


def _damage_the_middle_page(path: Path) -> None:
    """Overwrite the start of the main file's middle page (a bad sector); the -wal is left alone.
    No connection is opened: closing one would checkpoint the WAL into the file."""
    data = path.read_bytes()
    page_size = int.from_bytes(data[16:18], "big")
    with open(path, "r+b") as fh:
        fh.seek(len(data) // page_size // 2 * page_size)
        fh.write(b"\xff" * 64)


def test_repair_saves_what_is_readable_with_the_wals_calls_and_keeps_the_damaged_files(home: Path) -> None:
    path = home / "logs.db"
    with Store(path) as store:  # 200 calls, checkpointed into logs.db when the store closes
        store.write_calls(
            [
                make_record(conversation_id=f"c{n}", chain_id=f"c{n}", text=f"answer {n} " * 20)
                for n in range(200)
            ]
        )
    subprocess.run([sys.executable, "-c", FIVE_IN_THE_WAL, str(path)], check=True, timeout=120)
    alone = home / "alone.db"
    alone.write_bytes(path.read_bytes())
    assert _count(alone) == 200  # the five calls are only in logs.db-wal: moving logs.db would lose them
    _damage_the_middle_page(path)
    wal_before = Path(f"{path}-wal").read_bytes()
    result = CliRunner().invoke(cli, ["logs", "repair"])
    assert result.exit_code == 0, result.output
    assert "Saved " in result.output and ".damaged-" in result.output
    assert _count(path, "text LIKE 'in the wal %'") == 5  # nothing the WAL held is lost
    assert 5 < _count(path) < 205  # what the bad page held is gone, the rest is there
    with Store(path) as store:  # the new log is whole, searchable, and takes calls
        assert len(store.recent(None, query="wal")) == 5
        store.write_calls([make_record(conversation_id="after", chain_id="after")])
    kept = {
        p.name.split(".damaged-")[1].split("-", 2)[-1]: p for p in home.iterdir() if ".damaged-" in p.name
    }
    [wal] = [p for p in home.iterdir() if ".damaged-" in p.name and p.name.endswith("-wal")]
    assert wal.read_bytes() == wal_before and kept  # the damaged files are kept as they were


def test_a_log_that_is_not_damaged_is_left_as_it_is(home: Path) -> None:
    path = home / "logs.db"
    with Store(path) as store:
        store.write_calls([make_record()])
    result = CliRunner().invoke(cli, ["logs", "repair"])
    assert result.exit_code == 0 and "not damaged" in result.output
    assert not [p for p in home.iterdir() if ".damaged-" in p.name]


def test_a_log_open_in_another_process_is_not_repaired(home: Path) -> None:
    path = home / "logs.db"
    Store(path).check()
    code = "import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1])\ndb.execute('SELECT 1 FROM responses').fetchall()\nprint('open', flush=True)\ninput()"
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "open"
        result = CliRunner().invoke(cli, ["logs", "repair", "--force"])
    finally:
        child.communicate("\n", timeout=60)
    assert result.exit_code == 2, result.output
    assert f"open in process {child.pid}" in result.output
