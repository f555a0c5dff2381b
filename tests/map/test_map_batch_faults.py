"""Faults of the batch APIs themselves (issue 38 item 5), against the emulator's batch endpoints:
a 429 or 5xx on create or retrieve, output files with damaged or repeated lines, a batch that never
ends, batches whose id never reached the log, cancels of finished batches and of a live run's."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from map_helpers import read_lines, start_cli, write_orders
from test_map_batch import (
    ALL,
    API,
    Api,
    _submit,
    answer,
    held_batch_run,
    order_in,
    rows,
    tagged,
    wait_for_a_batch,
    with_,
)

from chainform import get_model
from chainform._map._batch_log import batches_of, record_intent, record_status, run_of
from chainform.cli import cli
from chainform.errors import BatchError, ProviderError
from chainform.store import Store
from chainform.testing.emulator import Emulator


def lookup(order: int) -> dict[str, Any]:
    """Look an order up by its number."""
    return {"order": order, "total": order / 2}


def run(emu: Emulator, count: int, api: Api, **kwargs: Any) -> list[Any]:
    """A batch map whose SDK retries nothing itself: the map's own retries are what is tested."""
    openai = {"profile": "openai"} if api.model.startswith("openai/") else {}
    model = get_model(api.model, base_url=api.url(emu), key="sk-test", max_retries=0, **openai)
    settings = {"prompt": "Extract: {text}", "tools": [lookup], "schema": "id int, total float"}
    return list(model.map(rows(count), batch=True, **{"batch_poll": 0, **settings, **kwargs}))


@ALL
def test_a_429_on_create_and_a_500_on_retrieve_are_retried_as_retries_says(api):
    with Emulator(default=answer) as emu:
        emu.batches.http_faults = [("create", 429), ("retrieve", 500)]
        results = run(emu, 3, api, transport_retries=1)
        assert emu.batches.http_faults == []  # both were met
    assert len(results) == 3 and all(r.ok for r in results), [r.error for r in results]


@ALL
def test_past_its_retries_a_batch_api_fault_is_a_typed_provider_error_not_internal(api):
    with Emulator(default=answer) as emu:
        emu.batches.http_faults = [("create", 503)]
        results = run(emu, 2, api, transport_retries=0)
    assert len(results) == 2
    for r in results:
        assert not r.ok and r.error.phase == "provider" and isinstance(r.error.exception, ProviderError)
        assert r.error.exception.status == 503


def damage_first_file(lines: int) -> Any:
    """The first output file with its first line not an object and its line `lines - 1` cut short."""
    done: list[bool] = []

    def edit(data: bytes) -> bytes:
        if done:
            return data
        done.append(True)
        out = data.splitlines(keepends=True)
        out[0] = b"[1]\n"
        out[lines - 1] = out[lines - 1][: len(out[lines - 1]) // 2] + b"\n"
        return b"".join(out)

    return edit


@with_("openai", "gemini")
def test_a_cut_short_or_non_object_line_fails_only_its_row_and_is_sent_again(api):
    with Emulator(default=lambda request: f"done {order_in(request)}") as emu:
        emu.batches.raw_output = damage_first_file(5)
        model = get_model(
            api.model,
            base_url=api.url(emu),
            key="k",
            **({"profile": "openai"} if "openai" in api.model else {}),
        )
        once = {
            r.key: r
            for r in model.map(rows(5), prompt="{text}", batch=True, batch_poll=0, transport_retries=0)
        }
        emu.batches.raw_output = damage_first_file(5)
        again = list(model.map(rows(5), prompt="{text}", batch=True, batch_poll=0, transport_retries=1))
        created = len(emu.batches.created)
    failed = {k for k, r in once.items() if not r.ok}
    assert len(failed) == 2 and all(r.text == f"done {k}" for k, r in once.items() if r.ok)
    assert all(r.ok for r in again) and created == 3  # the two rows in one more batch, not a loop


@ALL
def test_a_repeated_custom_id_is_sent_again_and_counted(api):
    first: list[bool] = []

    def repeat_once(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if first:
            return lines
        first.append(True)
        return [*lines, dict(lines[1])]

    seen: list[Any] = []
    with Emulator(default=answer) as emu:
        emu.batches.rewrite = repeat_once
        results = run(
            emu, 4, api, transport_retries=1, on_batch=lambda stats: seen.append(stats.duplicate_ids)
        )
    assert all(r.ok for r in results) and len(results) == 4
    assert max(seen) == 1


def test_a_batch_that_never_ends_fails_its_rows_after_batch_wait():
    api = API["openai"]
    with Emulator(default=answer) as emu:
        emu.batches.hold = True
        results = run(emu, 2, api, batch_poll=0.01, batch_wait=0.2)
        assert len(emu.batches.created) == 1
    assert all(not r.ok and "--batch-wait" in r.error.message for r in results)
    assert all(
        isinstance(r.error.exception, BatchError) and r.error.exception.kind == "timeout" for r in results
    )


@pytest.mark.parametrize(
    "flags",
    [
        ("--batch-poll", "0"),
        ("--batch-poll", "nan"),
        ("--batch-wait", "nan"),
        ("--batch-wait", "0"),
        ("--ocr-timeout", "nan"),
        ("--ocr-timeout", "inf"),
    ],
)
def test_batch_poll_and_wait_that_are_no_bound_are_usage_errors(tmp_path: Path, flags: tuple[str, str]):
    inp = write_orders(tmp_path / "in.jsonl", 1)
    argv = ["map", str(inp), "-o", str(tmp_path / "o.jsonl"), "-p", "{text}", "-m", API["openai"].model]
    result = CliRunner().invoke(cli, [*argv, "--batch", *flags])
    assert result.exit_code == 2, result.output
    assert [line for line in result.stderr.splitlines() if line.startswith("Error:")], result.stderr
    assert not (tmp_path / "o.jsonl").exists()


def where(api: Api, emu: Emulator) -> list[str]:
    return ["-m", api.model, "--base-url", api.url(emu), "--key", "sk-test"]


@with_("openai", "gemini")
def test_map_status_and_cancel_find_a_batch_whose_id_never_reached_the_log(api):
    with Emulator(default=answer) as emu, Store() as store:
        emu.batches.hold = True
        intent = record_intent(store, "run-3", api.model.split("/")[0], 1, tagged("run-3", "0-0"))
        asyncio.run(_submit(api.model_at(emu).client, intent.id, 1, "run-3"))
        status = CliRunner().invoke(cli, ["map", "status", "run-3", *where(api, emu)])
        assert status.exit_code == 0, status.output
        assert emu.batches.created[0] in status.output and api.running in status.output
        cancel = CliRunner().invoke(cli, ["map", "cancel", "run-3", *where(api, emu)])
        assert cancel.exit_code == 0 and "cancel" in cancel.output, cancel.output
        assert batches_of(store, "run-3")[0].batch_id == emu.batches.created[0]


@ALL
def test_cancel_of_a_batch_that_already_ended_says_so_and_exits_0(api):
    with Emulator(default=answer) as emu, Store() as store:
        intent = record_intent(store, "run-4", api.model.split("/")[0], 1, tagged("run-4", "0-0"))
        intent.batch_id = asyncio.run(_submit(api.model_at(emu).client, intent.id, 1, "run-4"))
        intent.status = "submitted"  # what the log last heard
        record_status(store, intent)
        emu.batches.polls = 0
        while not asyncio.run(_ended(api, emu, intent.batch_id)):
            pass
        cancel = CliRunner().invoke(cli, ["map", "cancel", "run-4", *where(api, emu)])
    assert cancel.exit_code == 0, cancel.output
    assert "already" in cancel.output and "Error" not in cancel.output


async def _ended(api: Api, emu: Emulator, batch_id: str) -> bool:
    from chainform._map._run import batch_api

    return bool((await batch_api(api.model_at(emu).client).poll(batch_id)).ended)


def test_map_status_with_the_server_down_is_exit_3():
    with Store() as store:
        intent = record_intent(store, "run-5", "openai", 1, tagged("run-5", "0-0"))
        intent.batch_id, intent.status = "batch_gone", "submitted"
        record_status(store, intent)
    argv = [
        "map",
        "status",
        "run-5",
        "-m",
        API["openai"].model,
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--key",
        "k",
    ]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 3, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr


def test_ctrl_c_names_the_run_and_a_cancel_during_a_live_run_sends_nothing_again(tmp_path, emulator):
    api = API["openai"]
    proc, argv, out = held_batch_run(api, emulator, tmp_path, 4)
    with Store() as store:
        run_id = run_of(store, str(out.resolve()))
    cancel = CliRunner().invoke(cli, ["map", "cancel", str(run_id), *where(api, emulator)])
    assert cancel.exit_code == 0, cancel.output
    _, err = proc.communicate(timeout=60)
    assert len(emulator.batches.created) == 1  # not submitted again by the live run
    assert all("cancelled" in line["error"]["message"] for line in read_lines(out)), err
    emulator.batches.hold = True
    proc = start_cli([*argv, "--resume"])  # the cancelled rows run again: a new batch, held
    wait_for_a_batch(proc, emulator, 2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert f"run {run_id} interrupted" in err and f"map status {run_id}" in err


@ALL
def test_results_files_that_are_never_readable_end_in_row_errors_after_the_retries(api):
    with Emulator(default=answer) as emu:
        emu.batches.raw_output = lambda data: b"not json\n" * 3
        results = run(emu, 2, api, transport_retries=1)
        created = len(emu.batches.created)
    assert created == 2 and len(results) == 2  # a first batch and one retry, then no more
    assert all(not r.ok and isinstance(r.error.exception, BatchError) for r in results)


@ALL
def test_a_404_on_retrieve_is_the_batch_gone_and_another_status_stays_a_provider_error(api):
    from chainform._map._run import batch_api

    async def poll(emu: Emulator, batch_id: str) -> BaseException:
        with pytest.raises(ProviderError) as caught:
            await batch_api(api.model_at(emu).client).poll(batch_id)
        return caught.value

    with Emulator(default=answer) as emu:
        gone = asyncio.run(poll(emu, api.gone))
        emu.batches.http_faults = [("retrieve", 400)]
        refused = asyncio.run(poll(emu, api.gone))
    assert isinstance(gone, BatchError) and gone.status == 404 and api.gone in str(gone)
    assert gone.provider == api.model.split("/")[0]
    assert not isinstance(refused, BatchError) and refused.status == 400
