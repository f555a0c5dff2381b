"""`chainform logs backup|rm|off|on|status`, and `logs --json` printing the stored record itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import Scripted

from chainform.store import CallRecord, Store

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def _two_chains(run, scripted: Scripted) -> list[dict]:
    scripted.script(["first answer", "second answer"])
    run("first question")
    run("second question")
    return json.loads(run("logs", "-n", "0", "--json").stdout)


def test_cli_logs_json_is_the_stored_record(run, scripted: Scripted) -> None:
    rows = _two_chains(run, scripted)
    stored = {r.id: r for r in Store().recent(None)}
    for row in rows:
        assert CallRecord.model_validate(row) == stored[row["id"]]
        assert row == stored[row["id"]].to_dict()


def test_cli_logs_backup(run, scripted: Scripted, tmp_path: Path) -> None:
    rows = _two_chains(run, scripted)
    target = tmp_path / "backup.db"
    result = run("logs", "backup", str(target))
    assert result.exit_code == 0 and str(target) in result.stdout
    assert [r.id for r in Store(target).recent(None)] == [r["id"] for r in reversed(rows)]
    again = run("logs", "backup", str(target))
    assert again.exit_code != 0 and "exists" in again.stderr


def test_cli_logs_rm(run, scripted: Scripted) -> None:
    rows = _two_chains(run, scripted)
    assert run("logs", "rm").exit_code == 2
    assert run("logs", "rm", "--before", "yesterday").exit_code == 2
    declined = run("logs", "rm", rows[0]["id"], input="n\n")
    assert declined.exit_code == 1 and len(Store().recent(None)) == 2
    assert run("logs", "rm", rows[0]["id"], "-y").stdout.strip() == "Removed 1 call."
    assert [r.id for r in Store().recent(None)] == [rows[1]["id"]]
    assert run("logs", "rm", "--before", "2999-01-01", "-y").stdout.strip() == "Removed 1 call."
    assert Store().recent(None) == []


def test_cli_logs_off_on_status(run, scripted: Scripted) -> None:
    scripted.script(["one", "two"])
    assert "Logging is on." in run("logs", "status").stdout
    assert run("logs", "off").stdout.strip() == "Logging is off."
    run("not logged")
    status = run("logs", "status").stdout
    assert "Logging is off." in status
    assert Store().recent(None) == []
    run("logs", "on")
    run("prompt", "logged")
    assert [r.prompt for r in Store().recent(None)] == ["logged"]
    assert "1 calls in 1 conversations" in run("logs", "status").stdout


def test_cli_logs_says_when_there_is_nothing_to_show(run, scripted: Scripted) -> None:
    empty = run("logs")
    assert empty.exit_code == 0 and empty.stdout == ""  # a pipe reads nothing
    assert f"No calls logged yet in {Store().path}." in empty.stderr
    assert json.loads(run("logs", "--json").stdout) == []
    scripted.script(["an answer"])
    run("a question")
    missed = run("logs", "-q", "zebra")
    assert missed.stdout == "" and "No logged call matches" in missed.stderr
    assert "an answer" in run("logs").stdout
    run("logs", "off")
    assert "Logging is off: `chainform logs on`" in run("logs", "-q", "zebra").stderr
