"""`map(..., batch=True)` / `chainform map --batch`: OpenAI's Batch API driven through the official
SDK against the emulator's Files + Batches endpoints (rounds, retries, resume after kill -9)."""

from __future__ import annotations

import json
import re
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from map_helpers import (
    MODEL,
    TOOLS_PY,
    answer_text,
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


def order_in(request: RecordedRequest) -> int:
    """The row's order number, in any wire format's request."""
    return int(re.search(r"order (\d+)", json.dumps(request.json)).group(1))


def failing_once(*bad: tuple[int, Any], then: Any = answer_with_tool) -> Any:
    """Rows whose first request answers the given fault (Fault: errored, Expired: expired)."""
    faults = dict(bad)

    def answer(request: RecordedRequest) -> Any:
        fault = faults.pop(order_in(request), None)
        return fault if fault is not None else then(request)

    return answer


def test_errored_and_expired_rows_go_into_the_next_batch():
    with Emulator(default=failing_once((3, Fault(500)), (4, Expired()))) as emu:
        results = run(emu, 10)
        batches = [emu.batches.batches[b].lines for b in emu.batches.created]
    ids = [sorted(line["custom_id"] for line in lines) for lines in batches]
    assert len(ids) == 3 and ids[0] == sorted(f"{n}-0" for n in range(10))
    # the next batch: the two failed lines again, with the other rows' second turns
    assert ids[1] == sorted(["3-0", "4-0", *(f"{n}-1" for n in range(10) if n not in (3, 4))])
    assert ids[2] == ["3-1", "4-1"]
    assert all(r.ok for r in results) and len(results) == 10


def test_rows_past_their_retries_are_typed_row_errors():
    with Emulator(default=failing_once((3, Fault(500)), (4, Expired()))) as emu:
        results = {r.key: r for r in run(emu, 6, retries=0)}
    assert len(results) == 6
    assert {k for k, r in results.items() if not r.ok} == {"3", "4"}
    assert isinstance(results["4"].error.exception, BatchError) and "batch_expired" in results["4"].error.message


def test_unknown_and_duplicate_custom_ids_in_results_are_row_errors_never_lost_or_doubled():
    def tamper(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        stranger = dict(lines[0], custom_id="no-such-row-0")
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


def wait_for_a_batch(proc: Any, emu: Emulator) -> None:
    """Until the CLI in `proc` has created its first batch."""
    deadline = time.monotonic() + 60
    while not emu.batches.created and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)


def test_killed_right_after_submit_then_resume_creates_one_batch_a_round(tmp_path, emulator):
    count = 40
    tools_file = tmp_path / "tools.py"
    tools_file.write_text(TOOLS_PY)
    inp, out = write_orders(tmp_path / "in.jsonl", count), tmp_path / "out.jsonl"
    emulator.default = answer_with_tool
    emulator.batches.hold = True  # the batch stays in progress across the restart
    argv = map_argv(inp, out, emulator.base_url, tools_file, "--batch", "--batch-poll", "0.05")
    proc = start_cli(argv)
    wait_for_a_batch(proc, emulator)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert (len(emulator.batches.created) == 1 and not out.exists()) or out.read_text() == ""
    emulator.batches.hold = False
    resumed = start_cli([*argv, "--resume"])
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert len(emulator.batches.created) == 2  # round 1 polled where it was, round 2 created once
    assert "batch round 2: completed (40/40 answered), 1 batch(es) created" in err  # the summary
    assert_exactly_once(read_lines(out), count)


def test_batch_with_a_provider_without_a_batch_api_names_those_with_one(tmp_path: Path):
    inp = write_orders(tmp_path / "in.jsonl", 2)
    for name in ("gemini/gemini-2.5-flash", "azure/gpt-4.1-mini"):
        argv = [str(inp), "-o", str(tmp_path / "o.jsonl"), "-p", "{text}", "-m", name, "--base-url", "http://127.0.0.1:9"]
        result = CliRunner().invoke(cli, ["map", *argv, "--key", "sk", "--batch"])
        assert result.exit_code == 2, result.output
        assert "no batch API" in result.output and "openai" in result.output and "anthropic" in result.output


def test_provider_limits_split_a_round_into_several_batches(monkeypatch):
    from chainform.clients._openai_batch import OpenAIBatches

    monkeypatch.setattr(OpenAIBatches, "max_requests", 4)
    with Emulator(default=answer_with_tool) as emu:
        emu.batches.max_requests = 4  # a bigger batch would fail validation
        results = run(emu, 10)
        sizes = [emu.batches.batches[b].body["request_counts"]["total"] for b in emu.batches.created]
    assert sizes == [4, 4, 2, 4, 4, 2] and all(r.ok for r in results)


def test_an_intent_whose_batch_id_was_never_logged_is_found_at_the_provider_not_sent_again():
    import openai

    from chainform.store import Store
    from chainform.store._batches import batches_of, record_intent

    with Emulator(default=answer_with_tool) as emu, Store() as store:
        intent = record_intent(store, "run-1", "openai", 1, ["0-0", "1-0"])  # killed before the batch id
        sdk = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="sk-test")
        body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "Extract: order 0"}]}
        lines = [{"custom_id": f"{n}-0", "method": "POST", "url": "/v1/chat/completions", "body": body} for n in (0, 1)]
        lines[1]["body"] = {**body, "messages": [{"role": "user", "content": "Extract: order 1"}]}
        upload = sdk.files.create(file=("b.jsonl", "\n".join(map(json.dumps, lines)).encode()), purpose="batch")
        sdk.batches.create(
            input_file_id=upload.id,
            endpoint="/v1/chat/completions",
            completion_window="24h",
            metadata={"chainform_intent": intent.id},
        )
        results = run(emu, 2, run_id="run-1")
        assert len(emu.batches.created) == 2  # the one found, and round 2
        assert batches_of(store, "run-1")[0].batch_id == emu.batches.created[0]
    assert sorted(r.key for r in results) == ["0", "1"] and all(r.ok for r in results)


def test_a_stored_batch_the_provider_no_longer_knows_is_sent_again():
    from chainform.store import Store
    from chainform.store._batches import record_intent, record_status

    with Emulator(default=answer_with_tool) as emu, Store() as store:
        gone = record_intent(store, "run-2", "openai", 1, ["0-0"])
        gone.batch_id, gone.status = "batch_forgotten", "submitted"
        record_status(store, gone)
        results = run(emu, 1, run_id="run-2")
        assert len(emu.batches.created) == 2
    assert results[0].ok


def test_map_status_and_cancel_show_and_stop_a_left_run(tmp_path, emulator):
    inp, out = write_orders(tmp_path / "in.jsonl", 5), tmp_path / "out.jsonl"
    emulator.default = answer_text
    emulator.batches.hold = True
    argv = map_argv(inp, out, emulator.base_url, None, "--batch", "--batch-poll", "0.05")
    proc = start_cli(argv)
    wait_for_a_batch(proc, emulator)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    from chainform.store import Store
    from chainform.store._batches import run_of

    with Store() as store:
        run_id = run_of(store, str(out.resolve()))
    assert run_id is not None
    where = ["-m", MODEL, "--base-url", emulator.base_url + "/v1", "--key", "sk-test"]
    status = CliRunner().invoke(cli, ["map", "status", run_id, *where])
    assert status.exit_code == 0 and "in_progress" in status.output and "0/5 done" in status.output
    cancel = CliRunner().invoke(cli, ["map", "cancel", run_id, *where])
    assert cancel.exit_code == 0 and "cancelled" in cancel.output
    again = CliRunner().invoke(cli, ["map", "cancel", run_id, *where])
    assert again.exit_code == 0 and "still running" in again.stderr
    emulator.batches.hold = False
    resumed = start_cli([*argv, "--resume"])  # the cancelled batch's rows go in a new batch
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    lines = read_lines(out)
    assert sorted(line["_map"]["key"] for line in lines) == [str(n) for n in range(5)]
    assert all(line["value"] == f"done {line['id']}" for line in lines)
    assert len(emulator.batches.created) == 2


def test_map_status_of_an_unknown_run_is_a_clear_error():
    result = CliRunner().invoke(cli, ["map", "status", "no-such-run"])
    assert result.exit_code == 2 and "no batch of a map run 'no-such-run'" in result.output


def responses_answer(request: RecordedRequest) -> Any:
    """`answer_with_tool` for the Responses API (input items; a function_call_output after the tool)."""
    n = order_in(request)
    if any(item.get("type") == "function_call_output" for item in request.json.get("input", [])):
        return json.dumps({"id": n, "total": n / 2})
    return tool_call("lookup", order=n)


def test_the_responses_endpoint_runs_a_tool_chain_through_batches():
    with Emulator(default=responses_answer) as emu:
        model = get_model("openai-responses/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="sk-test")
        settings = {"prompt": "Extract: {text}", "tools": [lookup], "schema": "id int, total float"}
        results = list(model.map(rows(6), batch=True, batch_poll=0, **settings))
        endpoints = {emu.batches.batches[b].body["endpoint"] for b in emu.batches.created}
        assert len(emu.batches.created) == 2 and endpoints == {"/v1/responses"}
    assert sorted(r.key for r in results) == [str(n) for n in range(6)]
    assert all(r.ok and r.value["total"] == r.input["id"] / 2 for r in results)
    assert all(r.usage.cost == PRICES.rate("openai/gpt-4.1-mini", batch=True).cost(r.usage)[0] for r in results)


def any_strategy(request: RecordedRequest) -> Any:
    """The lookup, then the answer as each output strategy asks for it: the final_result tool
    (tool), JSON text (native, prompted, and deferred's formatting call, which offers no tools)."""
    n = order_number(request)
    body = request.json
    names = {(t.get("function") or {}).get("name") for t in body.get("tools", [])}
    if body.get("messages", [{}])[-1].get("role") != "tool" and "lookup" in names:
        return tool_call("lookup", order=n)
    if "final_result" in names:
        return tool_call("final_result", id=n, total=n / 2)
    return json.dumps({"id": n, "total": n / 2})


@pytest.mark.parametrize(("strategy", "rounds"), [("native", 2), ("tool", 2), ("prompted", 2), ("deferred", 3)])
def test_each_output_strategy_works_in_batches_as_in_live_map(strategy, rounds):
    with Emulator(default=any_strategy) as emu:
        results = run(emu, 5, strategy=strategy)
        assert len(emu.batches.created) == rounds
    assert all(r.ok and r.value == {"id": r.input["id"], "total": r.input["id"] / 2} for r in results), results


def anthropic_answer(request: RecordedRequest) -> Any:
    """`answer_with_tool` for Anthropic's Messages (after the tool_result: final_result, or JSON)."""
    messages = request.json.get("messages", [])
    n = order_in(request)
    last = messages[-1].get("content") if messages else None
    if isinstance(last, list) and any(block.get("type") == "tool_result" for block in last):
        if any(tool.get("name") == "final_result" for tool in request.json.get("tools", [])):
            return tool_call("final_result", id=n, total=n / 2)  # the tool strategy
        return json.dumps({"id": n, "total": n / 2})
    return tool_call("lookup", order=n)


def test_anthropic_message_batches_run_a_tool_chain_retry_and_price_at_the_batch_price():
    with Emulator(default=failing_once((2, Fault(529)), (3, Expired()), then=anthropic_answer)) as emu:
        model = get_model("anthropic/claude-sonnet-4-0", base_url=emu.base_url, key="sk-test")
        settings = {"prompt": "Extract: {text}", "tools": [lookup], "schema": "id int, total float"}
        results = list(model.map(rows(6), batch=True, batch_poll=0, **settings))
        created = list(emu.batches.created)
    assert all(b.startswith("msgbatch") for b in created) and len(created) == 3  # 2 rounds + the retried
    assert sorted(r.key for r in results) == [str(n) for n in range(6)]
    assert all(r.ok and r.value["total"] == r.input["id"] / 2 for r in results), results
    rate = PRICES.rate("anthropic/claude-sonnet-4-0", batch=True)
    assert all(r.usage.cost == rate.cost(r.usage)[0] for r in results)


def test_a_cost_cap_holds_in_a_batch_run_within_one_row_of_it():
    with Emulator(default=answer_with_tool) as emu:
        one = run(emu, 1)[0].usage.cost  # a row's cost at the batch price
    with Emulator(default=answer_with_tool) as emu:
        results = run(emu, 12, max_cost=one * 4)  # rows held back by the cap: rounds go without them
    spent = sum(r.usage.cost for r in results)
    assert one * 3 < spent <= one * 4 and len(results) < 12
