"""A log left by the version that kept a sync chain's calls in `<log>-spool` (and in the `journal`
table) opens: every whole record is moved into the tables once, the half record its last process
was killed in is dropped with a warning that says so, and the spool is gone afterwards."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chainform.store import Store, new_id, schema_id
from chainform.store._rows import RESPONSE_COLUMNS

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


def _format_2(rid: str, now: float) -> bytes:
    """A sync chain's rows as the old spool held them: statement name -> parameter tuples (JSON)."""
    response = dict.fromkeys(RESPONSE_COLUMNS)
    response |= {"id": rid, "conversation_id": "conv-a", "chain_id": "chain-a", "seq": 0, "purpose": "chain"}
    response |= {"model": "old/model", "prompt": "hi", "messages": '[{"role":"user","contents":[]}]'}
    response |= {"options": "{}", "text": "hello", "created_at": now, "input_tokens": 3, "cost": "0.5"}
    rows = {
        "conversations": [["conv-a", "old/model", None, now]],
        "responses": [[response[c] for c in RESPONSE_COLUMNS]],
        "tool_calls": [[rid, "call_1", "lookup", '{"q":"x"}']],
    }
    return b"2 " + json.dumps(rows).encode()


def _format_3(first: str, second: str, now: float) -> bytes:
    """A two-call chain as the old compact record (format 3): messages stored once, named by index."""
    user = {"role": "user", "contents": [{"type": "text", "text": "Weather?"}]}
    answer = {"role": "assistant", "contents": [{"type": "text", "text": "sunny"}]}
    usage = [5, 1, 6, None, "0.001"]
    link = ["parent-conv", "parent-chain", "call_9", "helper"]
    calls = [
        [first, "conv-b", "named", "chain-b", 0, "chain", "native", "old/model", [0], {"seed": 1}, "",
         None, usage, 12.5, now, None, [["call_2", "get_weather", {"city": "Rome"}]],
         [["call_2", "get_weather", "sunny", None]], None, link],
        [second, "conv-b", "named", "chain-b", 1, "format", "native", "old/model", [0, 1], {}, '{"city":"Rome"}',
         {"city": "Rome"}, usage, 7.0, now + 1, None, [], [], "[final answer]\nsunny", link],
    ]  # fmt: skip
    text = json.dumps(SCHEMA, sort_keys=True, separators=(",", ":"))
    record = [first, now, "Weather?", "Be brief.", schema_id(SCHEMA), text, "compact", calls, [user, answer]]
    return b"3 " + json.dumps(record).encode()


@pytest.fixture
def old_log(tmp_path: Path) -> tuple[Path, list[str]]:
    """A log (tables of today's version) with a spool: two whole records, then half of a third."""
    path = tmp_path / "logs.db"
    Store(path).check()
    now = time.time()
    ids = [new_id() for _ in range(3)]
    cut = _format_2(new_id(), now)[:57]  # its process was killed in the middle of this write
    Path(f"{path}-spool").write_bytes(
        b"\n" + _format_2(ids[0], now) + b"\n\n" + _format_3(ids[1], ids[2], now) + b"\n\n" + cut
    )
    return path, ids


def test_an_old_spool_is_drained_once_and_its_cut_record_dropped_with_a_warning(old_log) -> None:
    path, ids = old_log
    with pytest.warns(UserWarning, match=r"dropped line 6 of .*logs\.db-spool \(57 bytes\).*cut short"):
        rows = Store(path).recent(None)
    assert not Path(f"{path}-spool").exists()
    assert sorted(r.id for r in rows) == sorted(ids)
    by_id = {r.id: r for r in rows}
    plain, call, formatting = (by_id[i] for i in ids)
    assert (plain.text, plain.usage and plain.usage.cost, plain.tool_calls[0].arguments) == (
        "hello",
        0.5,
        {"q": "x"},
    )
    assert (call.prompt, call.system, call.options, call.schema) == (
        "Weather?",
        "Be brief.",
        {"seed": 1},
        SCHEMA,
    )
    assert [m.text for m in formatting.messages] == ["Weather?", "sunny"]
    assert call.tool_results[0].output == "sunny" and call.conversation_name == "named"
    assert (call.parent_chain_id, call.agent_name) == ("parent-chain", "helper")
    assert (formatting.parsed, formatting.format_context_policy) == ({"city": "Rome"}, "compact")
    with contextlib.closing(sqlite3.connect(path)) as db:  # the tables hold them for any reader
        assert db.execute("SELECT count(*) FROM responses").fetchone() == (3,)
    Store(path).check()  # opened again: nothing left to drain, nothing written twice
    assert len(Store(path).recent(None)) == 3


def test_a_record_already_in_the_tables_is_not_written_twice(old_log) -> None:
    path, _ = old_log
    spool = Path(f"{path}-spool")
    kept = spool.read_bytes()
    with pytest.warns(UserWarning, match="dropped"):
        Store(path).check()
    spool.write_bytes(kept)  # a drain killed after its commit, before it deleted the spool
    with pytest.warns(UserWarning, match="dropped line 6"):
        assert len(Store(path).recent(None)) == 3


def test_the_cli_opens_an_old_log_and_says_what_it_dropped(old_log) -> None:
    path, ids = old_log
    env = {**os.environ, "CHAINFORM_HOME": str(path.parent)}
    command = [sys.executable, "-m", "chainform.cli", "logs", "--json", "-n", "0"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert sorted(r["id"] for r in json.loads(done.stdout)) == sorted(ids)
    [line] = done.stderr.strip().splitlines()
    assert "dropped line 6" in line and "cut short" in line and "Traceback" not in done.stderr
