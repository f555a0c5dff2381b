"""The log's advice fits the cause (issue 49 items 1 and 6): a lock names its holder, a full disk
says so (and the calls it cost are counted in one warning), a bad setting names the setting;
`logs backup` keeps the log's mode and `logs status` checks the settings like every command."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import chainform as cf
from chainform.cli import cli
from chainform.store import Store
from chainform.testing import ScriptedClient


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _error_line(result: Result) -> str:
    assert result.exit_code == 2, result.output
    [line] = [x for x in result.output.splitlines() if x.startswith("Error:")]
    assert "Traceback" not in result.output
    return line


@contextlib.contextmanager
def _holding(path: Path) -> Iterator[int]:
    """Another process holding the log's write lock; its pid."""
    code = (
        "import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('BEGIN IMMEDIATE')\nprint('held', flush=True)\ninput()"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        yield child.pid
    finally:
        child.communicate("\n", timeout=60)


def test_a_lock_names_the_process_that_holds_it_and_says_to_wait_or_stop_it(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = home / "logs.db"
    Store(path).check()
    monkeypatch.setenv("CHAINFORM_LOG_TIMEOUT", "0.2")
    with _holding(path) as pid:
        line = _error_line(_run("logs", "rm", "--before", "2020-01-01", "-y"))
    assert f"is locked by another process (process {pid})" in line
    assert "wait for it to finish, or stop it" in line and "CHAINFORM_LOG_TIMEOUT" in line
    assert "move it aside" not in line.lower() and "mv " not in line


@pytest.mark.parametrize("value", ["soon", "-1", "99999"])
def test_a_bad_timeout_names_the_setting_in_every_command_status_too(
    home: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CHAINFORM_LOG_TIMEOUT", value)
    for args in (["logs", "status"], ["logs"], ["hi", "-m", "openai/gpt-4.1-mini", "--key", "k"]):
        line = _error_line(_run(*args))
        assert "CHAINFORM_LOG_TIMEOUT" in line and "aside" not in line, args


@pytest.fixture
def full_disk(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`home`'s log on a disk with no room left: SQLite cannot grow the file (SQLITE_FULL)."""
    path = home / "logs.db"
    Store(path).check()
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("VACUUM")  # no free page left to fill
    real = sqlite3.connect

    def capped(database: object, *args: object, **kwargs: object) -> sqlite3.Connection:
        db = real(database, *args, **kwargs)  # type: ignore[arg-type]
        if Path(str(database)) == path:
            pages = db.execute("PRAGMA page_count").fetchone()[0]
            db.execute(f"PRAGMA max_page_count = {max(pages, 1)}")
        return db

    monkeypatch.setattr("chainform.store._store.sqlite3.connect", capped)
    return path


def test_calls_lost_to_a_full_disk_are_counted_in_one_warning(
    full_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = ScriptedClient([lambda messages, options: "x" * 20_000] * 8)  # each call needs new pages
    monkeypatch.setattr("chainform.cli._map.map_model", lambda name, **kw: cf.AsyncModel(client, name="s"))
    inp, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    inp.write_text("".join(f"row {n}\n" for n in range(6)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = _run("map", str(inp), "-o", str(out), "-m", "s")
    assert result.exit_code == 0, result.output
    with contextlib.closing(sqlite3.connect(full_disk)) as db:
        assert db.execute("SELECT count(*) FROM responses").fetchone()[0] == 0
    told = [str(w.message) for w in caught if "not logged" in str(w.message)]
    assert told == ["chainform: 6 calls not logged: disk full"]


def test_a_full_disk_at_open_says_so(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "logs.db"
    real = sqlite3.connect

    def no_room(database: object, *args: object, **kwargs: object) -> sqlite3.Connection:
        db = real(database, *args, **kwargs)  # type: ignore[arg-type]
        db.execute("PRAGMA max_page_count = 1")  # a new log cannot be made
        return db

    monkeypatch.setattr("chainform.store._store.sqlite3.connect", no_room)
    line = _error_line(_run("logs", "rm", "--before", "2020-01-01", "-y"))
    assert f"cannot write to the log at {path}: the disk holding it is full" in line
    assert "moving the log would not help" in line


def test_a_backup_keeps_the_logs_mode(home: Path, tmp_path: Path) -> None:
    path = home / "logs.db"
    Store(path).check()
    mode = path.stat().st_mode & 0o777
    assert mode == 0o600
    old = os.umask(0o022)  # a copy made the plain way would be 0644
    try:
        result = _run("logs", "backup", str(tmp_path / "copy.db"))
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "copy.db").stat().st_mode & 0o777 == mode
