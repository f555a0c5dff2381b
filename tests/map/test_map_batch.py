"""`map(..., batch=True)` / `chainform map --batch`: OpenAI's Batch API driven through the official
SDK against the emulator's Files + Batches endpoints (rounds, retries, resume after kill -9)."""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from map_helpers import (
    MODEL,
    TOOLS_PY,
    answer_with_tool,
    assert_exactly_once,
    map_argv,
    order_number,
    read_lines,
    start_cli,
    write_orders,
)

from chainform import get_model
from chainform.cli import cli
from chainform.errors import BatchError
from chainform.pricing import PRICES
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator, Expired, Fault, RecordedRequest


def lookup(order: int) -> dict[str, Any]:
    """Look an order up by its number."""
    return {"order": order, "total": order / 2}


def three_rounds(request: RecordedRequest) -> Any:
    """Two tool turns, then the answer: a chain of three model calls, so three batch rounds."""
    n = order_number(request)
    tools = sum(m.get("role") == "tool" for m in request.json.get("messages", []))
    return tool_call("lookup", order=n) if tools < 2 else json.dumps({"id": n, "total": n / 2})


def rows(count: int) -> list[dict[str, Any]]:
    return [{"id": n, "text": f"order {n}"} for n in range(count)]


def run(emu: Emulator, count: int, **kwargs: Any) -> list[Any]:
    model = get_model(MODEL, base_url=emu.base_url + "/v1", key="sk-test")
    settings = {"prompt": "Extract: {text}", "tools": [lookup], "schema": "id int, total float"}
    return list(model.map(rows(count), batch=True, batch_poll=0, **settings | kwargs))


def test_a_three_round_tool_chain_over_500_rows_finishes_each_row_once_in_three_batches():
    with Emulator(default=three_rounds, record=False) as emu:
        results = run(emu, 500)
        assert len(emu.batches.created) == 3  # one batch a round, every unfinished row in it
        sizes = [emu.batches.batches[b].body["request_counts"]["total"] for b in emu.batches.created]
    assert sizes == [500, 500, 500]
    assert sorted(int(r.key) for r in results) == list(range(500))
    assert all(r.ok and r.value["total"] == r.input["id"] / 2 for r in results)


def test_results_are_priced_at_the_batch_price():
    with Emulator(default=answer_with_tool) as emu:
        result = run(emu, 1)[0]
    rate = PRICES.rate(MODEL, batch=True)
    assert rate.cost(result.usage)[0] == result.usage.cost
    assert result.usage.cost < PRICES.rate(MODEL).cost(result.usage)[0]


def failing_once(*bad: tuple[int, Any]) -> Any:
    """Rows whose first request answers the given fault (Fault: errored, Expired: expired)."""
    faults = dict(bad)

    def answer(request: RecordedRequest) -> Any:
        fault = faults.pop(order_number(request), None)
        return fault if fault is not None else answer_with_tool(request)

    return answer


def test_errored_and_expired_rows_go_into_the_next_batch():
    with Emulator(default=failing_once((3, Fault(500)), (4, Expired()))) as emu:
        results = run(emu, 10)
        batches = [emu.batches.batches[b].lines for b in emu.batches.created]
    ids = [sorted(line["custom_id"] for line in lines) for lines in batches]
    assert len(ids) == 3 and ids[0] == sorted(f"{n}#0" for n in range(10))
    # the next batch: the two failed lines again, with the other rows' second turns
    assert ids[1] == sorted(["3#0", "4#0", *(f"{n}#1" for n in range(10) if n not in (3, 4))])
    assert ids[2] == ["3#1", "4#1"]
    assert all(r.ok for r in results) and len(results) == 10


def test_rows_past_their_retries_are_typed_row_errors():
    with Emulator(default=failing_once((3, Fault(500)), (4, Expired()))) as emu:
        results = {r.key: r for r in run(emu, 6, retries=0)}
    assert len(results) == 6
    assert {k for k, r in results.items() if not r.ok} == {"3", "4"}
    assert isinstance(results["4"].error.exception, BatchError) and "batch_expired" in results["4"].error.message


def test_unknown_and_duplicate_custom_ids_in_results_are_row_errors_never_lost_or_doubled():
    def tamper(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        stranger = dict(lines[0], custom_id="no-such-row#0")
        return [*lines, dict(lines[1]), stranger]

    with Emulator(default=answer_with_tool) as emu:
        emu.batches.rewrite = tamper
        results = run(emu, 8, retries=0)
    keys = Counter(r.key for r in results)
    assert sorted(keys, key=int) == [str(n) for n in range(8)] and set(keys.values()) == {1}
    failed = [r for r in results if not r.ok]
    assert len(failed) == 2  # each round's second line is named twice
    assert all(isinstance(r.error.exception, BatchError) and "2 times" in r.error.message for r in failed)


def test_a_failed_batch_is_retried_then_its_rows_fail():
    with Emulator(default=answer_with_tool) as emu:
        emu.batches.fail_next = 1
        assert all(r.ok for r in run(emu, 3))
        emu.batches.fail_next = 5
        results = run(emu, 3, retries=0)
    assert all(not r.ok and "emulated batch failure" in r.error.message for r in results)


def test_killed_right_after_submit_then_resume_creates_one_batch_a_round(tmp_path, emulator):
    count = 40
    tools_file = tmp_path / "tools.py"
    tools_file.write_text(TOOLS_PY)
    inp, out = write_orders(tmp_path / "in.jsonl", count), tmp_path / "out.jsonl"
    emulator.default = answer_with_tool
    emulator.batches.hold = True  # the batch stays in progress across the restart
    argv = map_argv(inp, out, emulator.base_url, tools_file, "--batch", "--batch-poll", "0.05")
    proc = start_cli(argv)
    deadline = time.monotonic() + 60
    while not emulator.batches.created and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert (len(emulator.batches.created) == 1 and not out.exists()) or out.read_text() == ""
    emulator.batches.hold = False
    resumed = start_cli([*argv, "--resume"])
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert len(emulator.batches.created) == 2  # round 1 polled where it was, round 2 created once
    assert_exactly_once(read_lines(out), count)


def test_batch_with_a_provider_without_a_batch_api_names_those_with_one(tmp_path: Path):
    inp = write_orders(tmp_path / "in.jsonl", 2)
    argv = [str(inp), "-o", str(tmp_path / "o.jsonl"), "-p", "{text}", "-m", "anthropic/claude-sonnet-4-0"]
    result = CliRunner().invoke(cli, ["map", *argv, "--key", "sk", "--batch"])
    assert result.exit_code == 2
    assert "no batch API" in result.output and "openai" in result.output
