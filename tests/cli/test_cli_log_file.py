"""The log is a plain SQLite file: what a command logged is in its tables when the command returns,
for sqlite3 and Datasette to read; a log that cannot be used stops a command with one line (exit 2)."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result

from chainform.store import Store
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator
from server_helpers import free_port, serving

DOCS = Path(__file__).resolve().parents[2]


def _doc_command(tool: str) -> str:
    """The line of docs/cli.md (the same in README.md) that runs `tool` on the log, its comment cut."""
    found = {
        line.split("  #")[0].strip()
        for name in ("docs/cli.md", "README.md")
        for line in (DOCS / name).read_text(encoding="utf-8").splitlines()
        if line.startswith(f'{tool} "$(chainform logs path)"')
    }
    assert len(found) == 1, found
    return found.pop()


def _shell_env(home: Path) -> dict[str, str]:
    """The environment a user's shell would have: this venv's `chainform` on PATH, this home."""
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}", "CHAINFORM_HOME": str(home)}


ADD = "def add(a: int, b: int) -> int:\n    'Add two numbers.'\n    return a + b"


def _chain(run: Callable[..., Result], emulator: Emulator) -> Result:
    """`chainform "Sum 2 and 3" --functions ...` against the emulator: a tool call, then the answer."""
    emulator.add(tool_call("add", a=2, b=3))
    emulator.add("5")
    url = emulator.base_url + "/v1"
    return run(
        "Sum 2 and 3", "-m", "openai/gpt-4.1-mini", "--base-url", url, "--key", "sk-t", "--functions", ADD
    )


def _count(path: Path, table: str) -> int:
    with contextlib.closing(sqlite3.connect(path)) as db:  # a fresh connection, no chainform code
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def test_sqlite3_counts_a_cli_chains_calls_once_it_returns(run, emulator: Emulator, home: Path) -> None:
    result = _chain(run, emulator)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "5"
    path = Path(run("logs", "path").stdout.strip())
    assert path == home / "logs.db"
    assert (_count(path, "responses"), _count(path, "tool_calls"), _count(path, "tool_results")) == (2, 1, 1)
    assert not Path(f"{path}-spool").exists()
    command = _doc_command("sqlite3")  # the docs' line, run as written
    done = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, env=_shell_env(home), timeout=60
    )
    assert (done.returncode, done.stdout.strip()) == (0, "2"), done.stderr


@contextlib.contextmanager
def _datasette(home: Path) -> Iterator[str]:
    """The docs' `datasette "$(chainform logs path)"`, on 127.0.0.1 and a free port; its base URL.
    Always stopped (`exec`: the shell becomes Datasette, so stopping it stops Datasette)."""
    port = free_port()
    argv = ["bash", "-c", f"exec {_doc_command('datasette')} -h 127.0.0.1 -p {port}"]
    base = f"http://127.0.0.1:{port}"
    with serving(
        argv, base + "/-/versions.json", within_s=30, stdout=subprocess.DEVNULL, env=_shell_env(home)
    ):
        yield base


def test_datasette_reads_the_last_call_over_http(run, emulator: Emulator, home: Path) -> None:
    assert _chain(run, emulator).exit_code == 0
    [last] = Store(home / "logs.db").recent(1)
    with _datasette(home) as base:
        url = f"{base}/logs/responses.json?_shape=array&_sort_desc=created_at&_size=1"
        with urllib.request.urlopen(url, timeout=10) as answer:
            [row] = json.load(answer)
    assert (row["id"], row["text"], row["seq"]) == (last.id, "5", 1)


def _one_error_line(result: Result) -> str:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("Error: ") and "Traceback" not in result.stderr
    return line


def test_a_log_that_is_not_sqlite_is_one_error_line(run, scripted, home: Path) -> None:
    scripted.script(["never sent"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "logs.db").write_bytes(b"these are not the pages of a database\n" * 200)
    line = _one_error_line(run("prompt", "hi"))
    assert "logs.db" in line and "not a database" in line
    assert scripted.client is not None and scripted.client.requests == []


@pytest.fixture
def read_only_log(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`home`'s log, readable but not writable: its mode, and (for root, whom modes do not stop) the
    way SQLite then opens it, read only."""
    path = home / "logs.db"
    Store(path).check()
    os.chmod(path, 0o444)
    if os.geteuid() == 0:
        real = sqlite3.connect

        def read_only(database: object, *args: object, **kwargs: object) -> sqlite3.Connection:
            return real(f"file:{database}?mode=ro", *args, uri=True, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr("chainform.store._store.sqlite3.connect", read_only)
    return path


def test_a_read_only_log_is_one_error_line(run, scripted, read_only_log: Path) -> None:
    scripted.script(["never sent"])
    line = _one_error_line(run("prompt", "hi"))
    assert str(read_only_log) in line and "readonly" in line
    assert scripted.client is not None and scripted.client.requests == []


def test_a_locked_log_is_one_error_line_after_the_timeout(run, scripted, home: Path, monkeypatch) -> None:
    scripted.script(["never sent"])
    path = home / "logs.db"
    Store(path).check()
    monkeypatch.setenv("CHAINFORM_LOG_TIMEOUT", "0.3")
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the log's lock
        line = _one_error_line(run("prompt", "hi"))
        holder.execute("ROLLBACK")
    assert "is locked by another process" in line and "CHAINFORM_LOG_TIMEOUT" in line
    assert scripted.client is not None and scripted.client.requests == []


def test_a_bad_log_timeout_is_one_error_line(run, scripted, monkeypatch) -> None:
    scripted.script(["never sent"])
    monkeypatch.setenv("CHAINFORM_LOG_TIMEOUT", "soon")
    assert "CHAINFORM_LOG_TIMEOUT" in _one_error_line(run("prompt", "hi"))


def test_datasette_finds_the_search_index_of_a_log_upgraded_from_version_9(home: Path) -> None:
    import time

    from chainform.store._migrations import migrate

    home.mkdir(parents=True, exist_ok=True)
    path = home / "logs.db"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:  # a log of version 9
        db.execute("BEGIN")
        migrate(db, upto=9)
        db.execute("INSERT INTO conversations VALUES ('c1', 'm', NULL, ?)", (time.time(),))
        for rid, text in (("r1", "pelicans glide"), ("r2", "東京都に行く"), ("r3", "herons wade")):
            db.execute(
                """INSERT INTO responses (id, conversation_id, chain_id, seq, purpose, model, prompt,
                   text, created_at) VALUES (?, 'c1', 'k1', 0, 'chain', 'm', 'q', ?, ?)""",
                (rid, text, time.time()),
            )
        db.execute("COMMIT")
    Store(path).check()  # any command migrates it
    with _datasette(home) as base:
        for search, ids in (("pelicans", ["r1"]), ("東京都", ["r2"]), ("wade", ["r3"])):
            query = urllib.parse.urlencode({"_search": search, "_shape": "array"})
            with urllib.request.urlopen(f"{base}/logs/responses.json?{query}", timeout=10) as answer:
                assert [row["id"] for row in json.load(answer)] == ids, search


def test_an_empty_search_is_one_error_line(run, home: Path) -> None:
    Store(home / "logs.db").check()
    line = _one_error_line(run("logs", "-q", ""))
    assert "search is empty" in line
