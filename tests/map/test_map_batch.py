"""`map(..., batch=True)` / `chainform map --batch`: OpenAI's Batch API, Anthropic's Message Batches
and Gemini's batch mode, each driven through its official SDK against the emulator's batch endpoints
(rounds, retries, typed row errors, resume after kill -9). The tests of what every batch API must
do run once per provider (`API`); those of one API's own features name it."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from map_helpers import (
    TOOLS_PY,
    answer_with_tool,
    assert_exactly_once,
    map_argv,
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


@dataclass(frozen=True)
class Api:
    """One provider's batch API as the tests drive it."""

    model: str
    suffix: str  # after the emulator's root in --base-url
    id_field: str  # where a request or result line names its custom_id
    done: str  # the status of a batch that ended with its results
    running: str  # the status of a batch still in progress
    gone: str  # a batch id the provider does not know

    def url(self, emu: Emulator) -> str:
        return emu.base_url + self.suffix

    def model_at(self, emu: Emulator) -> Any:
        openai = (
            {"profile": "openai"} if self.model.startswith("openai/") else {}
        )  # the emulator plays OpenAI
        return get_model(self.model, base_url=self.url(emu), key="sk-test", **openai)


API = {
    "openai": Api("openai/gpt-4.1-mini", "/v1", "custom_id", "completed", "in_progress", "batch_forgotten"),
    "anthropic": Api(
        "anthropic/claude-haiku-4-5", "", "custom_id", "ended", "in_progress", "msgbatch_forgotten"
    ),
    "gemini": Api("gemini/gemini-2.5-flash", "", "key", "succeeded", "running", "batches/forgotten"),
}
ALL = pytest.mark.parametrize("api", list(API.values()), ids=list(API))


def with_(*names: str) -> Any:
    """The batch APIs `names` only (a feature the others lack)."""
    return pytest.mark.parametrize("api", [API[n] for n in names], ids=list(names))


def lookup(order: int) -> dict[str, Any]:
    """Look an order up by its number."""
    return {"order": order, "total": order / 2}


def order_in(request: RecordedRequest) -> int:
    """The row's order number, in any wire format's request."""
    return int(re.search(r"order (\d+)", json.dumps(request.json)).group(1))


def tool_results(request: RecordedRequest) -> int:
    """The tool results a request carries back, in any wire format (chat, responses, Anthropic, Gemini)."""
    text = json.dumps(request.json)
    markers = (
        '"role": "tool"',
        '"type": "tool_result"',
        '"functionResponse"',
        '"type": "function_call_output"',
    )
    return sum(text.count(marker) for marker in markers)


def tool_names(request: RecordedRequest) -> set[str]:
    """The tools a request offers, in any wire format."""
    names = set()
    for tool in request.json.get("tools", []):
        names |= {(tool.get("function") or {}).get("name"), tool.get("name")}
        names |= {d.get("name") for d in tool.get("functionDeclarations", [])}
    return names - {None}


def answer(request: RecordedRequest, lookups: int = 1) -> Any:
    """`lookups` tool turns, then the answer as the output strategy asks for it: the final_result
    tool (tool), JSON text (native, prompted, and deferred's formatting call, which offers no tools)."""
    n = order_in(request)
    names = tool_names(request)
    if tool_results(request) < lookups and "lookup" in names:
        return tool_call("lookup", order=n)
    if "final_result" in names:
        return tool_call("final_result", id=n, total=n / 2)
    return json.dumps({"id": n, "total": n / 2})


def three_rounds(request: RecordedRequest) -> Any:
    """Two tool turns, then the answer: a chain of three model calls, so three batch rounds."""
    return answer(request, lookups=2)


def rows(count: int) -> list[dict[str, Any]]:
    return [{"id": n, "text": f"order {n}"} for n in range(count)]


def run(emu: Emulator, count: int, api: Api = API["openai"], **kwargs: Any) -> list[Any]:
    settings = {"prompt": "Extract: {text}", "tools": [lookup], "schema": "id int, total float"}
    return list(api.model_at(emu).map(rows(count), batch=True, batch_poll=0, **settings | kwargs))


def batch_ids(emu: Emulator, api: Api) -> list[list[str]]:
    """The custom_ids of each batch the emulator was given, in creation order, without the run's
    tag (`<key>-<turn>`)."""
    return [
        sorted(line[api.id_field].rsplit("-", 1)[0] for line in emu.batches.batches[b].lines)
        for b in emu.batches.created
    ]


def tagged(run_id: str, *ids: str) -> list[str]:
    """The custom_ids `<key>-<turn>` as run `run_id` sends them."""
    from chainform._map._batch import run_tag

    return [f"{i}-{run_tag(run_id)}" for i in ids]


@ALL
def test_a_three_round_tool_chain_over_500_rows_finishes_each_row_once_in_three_batches(api):
    with Emulator(default=three_rounds, record=False) as emu:
        results = run(emu, 500, api)
        sizes = [len(ids) for ids in batch_ids(emu, api)]
    assert sizes == [500, 500, 500]  # one batch a round, every unfinished row in it
    assert sorted(int(r.key) for r in results) == list(range(500))
    assert all(r.ok and r.value["total"] == r.input["id"] / 2 for r in results)


@ALL
def test_results_are_priced_at_the_batch_price_of_the_price_database(api):
    with Emulator(default=answer) as emu:
        results = run(emu, 3, api)
    rate = PRICES.rate(api.model, batch=True)
    assert all(r.ok and r.usage.cost == rate.cost(r.usage)[0] for r in results)
    assert all(r.usage.cost < PRICES.rate(api.model).cost(r.usage)[0] for r in results)


def failing_once(*bad: tuple[int, Any], then: Any = answer) -> Any:
    """Rows whose first request answers the given fault (Fault: errored, Expired: expired)."""
    faults = dict(bad)

    def reply(request: RecordedRequest) -> Any:
        fault = faults.pop(order_in(request), None)
        return fault if fault is not None else then(request)

    return reply


@ALL
def test_errored_and_expired_rows_go_into_the_next_batch(api):
    with Emulator(default=failing_once((3, Fault(500)), (4, Expired()))) as emu:
        results = run(emu, 10, api)
        ids = batch_ids(emu, api)
    assert len(ids) == 3 and ids[0] == sorted(f"{n}-0" for n in range(10))
    # the next batch: the two failed lines again, with the other rows' second turns
    assert ids[1] == sorted(["3-0", "4-0", *(f"{n}-1" for n in range(10) if n not in (3, 4))])
    assert ids[2] == ["3-1", "4-1"]
    assert all(r.ok for r in results) and len(results) == 10


@ALL
def test_rows_past_their_retries_are_typed_row_errors(api):
    with Emulator(default=failing_once((3, Fault(500)), (4, Expired()))) as emu:
        results = {r.key: r for r in run(emu, 6, api, transport_retries=0)}
    assert len(results) == 6
    assert {k for k, r in results.items() if not r.ok} == {"3", "4"}
    errored, expired = results["3"].error.exception, results["4"].error.exception
    assert isinstance(errored, BatchError) and isinstance(expired, BatchError)
    assert expired.kind == "timeout" and errored.kind != "timeout"


@ALL
def test_unknown_and_duplicate_custom_ids_in_results_are_row_errors_never_lost_or_doubled(api):
    def tamper(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        stranger = dict(lines[0], **{api.id_field: "no-such-row-0"})
        return [*lines, dict(lines[1]), stranger]

    with Emulator(default=answer) as emu:
        emu.batches.rewrite = tamper
        results = run(emu, 8, api, transport_retries=0)
    keys = Counter(r.key for r in results)
    assert sorted(keys, key=int) == [str(n) for n in range(8)] and set(keys.values()) == {1}
    failed = [r for r in results if not r.ok]
    assert len(failed) == 2  # each round's second line is named twice
    assert all(isinstance(r.error.exception, BatchError) and "2 times" in r.error.message for r in failed)


@with_("openai", "gemini")  # an Anthropic batch does not fail as a whole
def test_a_failed_batch_is_retried_then_its_rows_fail(api):
    with Emulator(default=answer) as emu:
        emu.batches.fail_next = 1
        assert all(r.ok for r in run(emu, 3, api))
        emu.batches.fail_next = 5
        results = run(emu, 3, api, transport_retries=0)
    assert all(not r.ok and "no result for" in r.error.message for r in results)


def wait_for_a_batch(proc: Any, emu: Emulator, count: int = 1) -> None:
    """Until the CLI in `proc` has created its first batch (`count` batches in all)."""
    deadline = time.monotonic() + 60
    while len(emu.batches.created) < count and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)


def cli_argv(
    api: Api, emu: Emulator, inp: Path, out: Path, tools_file: Path | None, *extra: str
) -> list[str]:
    """`map_argv` for `api`'s model at the emulator."""
    argv = map_argv(inp, out, emu.base_url, tools_file, *extra)
    argv[argv.index("-m") + 1] = api.model
    argv[argv.index("--base-url") + 1] = api.url(emu)
    if not api.model.startswith("openai/"):  # a profile name is for OpenAI-compatible models
        del argv[argv.index("--profile") : argv.index("--profile") + 2]
    return argv


@ALL
def test_killed_right_after_submit_then_resume_creates_one_batch_a_round(api, tmp_path, emulator):
    count = 40
    tools_file = tmp_path / "tools.py"
    tools_file.write_text(TOOLS_PY)
    inp, out = write_orders(tmp_path / "in.jsonl", count), tmp_path / "out.jsonl"
    emulator.default = answer
    emulator.batches.hold = True  # the batch stays in progress across the restart
    argv = cli_argv(api, emulator, inp, out, tools_file, "--batch", "--batch-poll", "0.05")
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
    assert f"batch round 2: {api.done} (40/40 answered), 1 batch(es) created" in err  # the summary
    assert_exactly_once(read_lines(out), count)


def test_batch_with_a_provider_without_a_batch_api_names_those_with_one(tmp_path: Path):
    inp = write_orders(tmp_path / "in.jsonl", 2)
    for name, key in (
        ("bedrock/anthropic.claude-3-5-haiku-20241022-v1:0", "AK:SK"),
        ("azure/gpt-4.1-mini", "sk"),
    ):
        argv = [
            str(inp),
            "-o",
            str(tmp_path / "o.jsonl"),
            "-p",
            "{text}",
            "-m",
            name,
            "--base-url",
            "http://127.0.0.1:9",
        ]
        result = CliRunner().invoke(cli, ["map", *argv, "--key", key, "--batch"])
        assert result.exit_code == 2, result.output
        assert "no batch API" in result.output
        assert all(p in result.output for p in ("openai", "anthropic", "gemini"))
        assert not (tmp_path / "o.jsonl").exists()  # refused before OUT was made


@ALL
def test_provider_limits_split_a_round_into_several_batches(api, monkeypatch):
    from chainform._map._run import batch_api

    with Emulator(default=answer) as emu:
        monkeypatch.setattr(type(batch_api(api.model_at(emu).client)), "max_requests", 4)
        emu.batches.max_requests = 4  # a bigger batch would fail validation
        results = run(emu, 10, api)
        sizes = [len(ids) for ids in batch_ids(emu, api)]
    assert sizes == [4, 4, 2, 4, 4, 2] and all(r.ok for r in results)


async def _submit(client: Any, intent: str, size: int = 1, run_id: str = "other-run") -> str:
    """Submit a batch of `size` requests for `intent` straight through the batch API, as the
    first round of run `run_id` sends them."""
    from chainform._map._run import batch_api
    from chainform.types import ChatOptions, Message

    batches = batch_api(client)

    def line(n: int) -> bytes:
        body = client.batch_body(client.build_request([Message.user(f"Extract: order {n}")], ChatOptions()))
        return bytes(batches.line(tagged(run_id, f"{n}-0")[0], body))

    return str(await batches.submit([line(n) for n in range(size)], intent))


@ALL
def test_a_batch_whose_id_was_lost_is_found_at_the_provider_by_its_intent(api):
    from chainform._map._run import batch_api
    from chainform.clients._openai_batch import Intent

    async def submit_then_find(client: Any) -> tuple[str, str | None, str | None]:
        since = time.time()
        submitted = await _submit(client, "intent-1", 2)
        find = batch_api(client).find
        # another size, and a batch the log names
        other = Intent("intent-2", 3, since, frozenset({submitted}))
        return submitted, await find(Intent("intent-1", 2, since)), await find(other)

    with Emulator(default=answer) as emu:
        submitted, found, other = asyncio.run(submit_then_find(api.model_at(emu).client))
        assert submitted == emu.batches.created[0]
    assert found == submitted and other is None


def test_an_anthropic_batch_is_found_only_where_one_batch_fits_the_intent():
    """Message Batches carry no metadata: the batch is known by its size, its time and the log's ids."""
    from chainform._map._run import batch_api
    from chainform.clients._openai_batch import Intent

    async def scene(client: Any) -> list[str | None]:
        find = batch_api(client).find
        since = time.time()
        first = await _submit(client, "a", 2)
        await _submit(client, "b", 3)
        found = [
            await find(Intent("a", 2, since)),
            await find(Intent("a", 2, since + 3600)),
        ]  # made too early
        second = await _submit(client, "c", 2)  # two batches of that size since the intent
        found += [await find(Intent("a", 2, since)), await find(Intent("a", 2, since, frozenset({second})))]
        return [*found, first]

    with Emulator(default=answer) as emu:
        found_once, too_old, ambiguous, known, first = asyncio.run(
            scene(API["anthropic"].model_at(emu).client)
        )
    assert found_once == first and known == first
    assert too_old is None and ambiguous is None


@ALL
def test_an_intent_whose_batch_id_was_never_logged_is_found_at_the_provider_not_sent_again(api):
    from chainform._map._batch_log import batches_of, record_intent
    from chainform.store import Store

    with Emulator(default=answer) as emu, Store() as store:
        provider = api.model.split("/")[0]
        intent = record_intent(
            store, "run-1", provider, 1, tagged("run-1", "0-0", "1-0")
        )  # killed before the batch id
        asyncio.run(_submit(api.model_at(emu).client, intent.id, 2, "run-1"))  # what the killed run had sent
        results = run(emu, 2, api, run_id="run-1")
        assert batches_of(store, "run-1")[0].batch_id == emu.batches.created[0]  # the one found
        assert batch_ids(emu, api)[0] == ["0-0", "1-0"]
        assert all("0-0" not in ids for ids in batch_ids(emu, api)[1:])  # round 1 never sent again
    assert sorted(r.key for r in results) == ["0", "1"] and all(r.ok for r in results)


@ALL
def test_a_stored_batch_the_provider_no_longer_knows_is_sent_again(api):
    from chainform._map._batch_log import record_intent, record_status
    from chainform.store import Store

    with Emulator(default=answer) as emu, Store() as store:
        gone = record_intent(store, "run-2", api.model.split("/")[0], 1, tagged("run-2", "0-0"))
        gone.batch_id, gone.status = api.gone, "submitted"
        record_status(store, gone)
        results = run(emu, 1, api, run_id="run-2")
        assert len(emu.batches.created) == 2
    assert results[0].ok


def held_batch_run(api: Api, emu: Emulator, tmp_path: Path, count: int) -> tuple[Any, list[str], Path]:
    """`chainform map --batch` of `count` text rows in a child process, its first batch held in
    progress at the emulator: (the process, its argv, OUT)."""
    inp, out = write_orders(tmp_path / "in.jsonl", count), tmp_path / "out.jsonl"
    emu.default = lambda request: f"done {order_in(request)}"
    emu.batches.hold = True
    argv = cli_argv(api, emu, inp, out, None, "--batch", "--batch-poll", "0.05")
    proc = start_cli(argv)
    wait_for_a_batch(proc, emu)
    return proc, argv, out


@with_("openai", "gemini")
def test_map_status_and_cancel_show_and_stop_a_left_run(api, tmp_path, emulator):
    proc, argv, out = held_batch_run(api, emulator, tmp_path, 5)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    from chainform._map._batch_log import run_of
    from chainform.store import Store

    with Store() as store:
        run_id = run_of(store, str(out.resolve()))
    assert run_id is not None
    where = ["-m", api.model, "--base-url", api.url(emulator), "--key", "sk-test"]
    status = CliRunner().invoke(cli, ["map", "status", run_id, *where])
    assert status.exit_code == 0 and api.running in status.output, status.output
    assert ("0/5 done" in status.output) == (api is API["openai"])  # Gemini's batches say no counts
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
    assert all(line.get("value") == f"done {line['id']}" for line in lines), lines
    assert len(emulator.batches.created) == 2


def test_map_status_of_an_unknown_run_is_a_clear_error():
    result = CliRunner().invoke(cli, ["map", "status", "no-such-run"])
    assert result.exit_code == 2 and "no batch of a map run 'no-such-run'" in result.output


def test_the_responses_endpoint_runs_a_tool_chain_through_batches():
    with Emulator(default=answer) as emu:
        model = get_model(
            "openai-responses/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="sk-test", profile="openai"
        )
        settings = {"prompt": "Extract: {text}", "tools": [lookup], "schema": "id int, total float"}
        results = list(model.map(rows(6), batch=True, batch_poll=0, **settings))
        endpoints = {emu.batches.batches[b].body["endpoint"] for b in emu.batches.created}
        assert len(emu.batches.created) == 2 and endpoints == {"/v1/responses"}
    assert sorted(r.key for r in results) == [str(n) for n in range(6)]
    assert all(r.ok and r.value["total"] == r.input["id"] / 2 for r in results)
    assert all(
        r.usage.cost == PRICES.rate("openai/gpt-4.1-mini", batch=True).cost(r.usage)[0] for r in results
    )


@ALL
@pytest.mark.parametrize(
    ("strategy", "rounds"), [("native", 2), ("tool", 2), ("prompted", 2), ("deferred", 3)]
)
def test_each_output_strategy_works_in_batches_as_in_live_map(api, strategy, rounds):
    with Emulator(default=answer) as emu:
        results = run(emu, 5, api, strategy=strategy)
        assert len(emu.batches.created) == rounds
    assert all(r.ok and r.value == {"id": r.input["id"], "total": r.input["id"] / 2} for r in results), (
        results
    )


def test_a_cost_cap_holds_in_a_batch_run_within_one_row_of_it():
    with Emulator(default=answer_with_tool) as emu:
        one = run(emu, 1)[0].usage.cost  # a row's cost at the batch price
    with Emulator(default=answer_with_tool) as emu:
        results = run(emu, 12, max_cost=one * 4)  # rows held back by the cap: rounds go without them
    spent = sum(r.usage.cost for r in results)
    assert one * 3 < spent <= one * 4 and len(results) < 12


def test_the_emulated_gemini_batch_takes_a_few_polls_as_the_sdk_sees_it():
    from google import genai
    from google.genai import errors

    async def lifecycle(emu: Emulator) -> tuple[list[str], bytes, str, int]:
        sdk = genai.Client(api_key="k", http_options={"base_url": emu.base_url})
        lines = [
            {"key": f"r{n}", "request": {"contents": [{"parts": [{"text": f"order {n}"}]}]}} for n in (1, 2)
        ]
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        upload = await sdk.aio.files.upload(file=io.BytesIO(data), config={"mime_type": "application/jsonl"})
        batch = await sdk.aio.batches.create(
            model="gemini-2.5-flash", src=upload.name, config={"display_name": "d"}
        )
        states = [batch.state.value]
        while not batch.done:
            batch = await sdk.aio.batches.get(name=batch.name)
            states.append(batch.state.value)
        results = await sdk.aio.files.download(file=batch.dest.file_name)
        other = await sdk.aio.batches.create(model="gemini-2.5-flash", src=upload.name)
        await sdk.aio.batches.cancel(name=other.name)
        cancelled = (await sdk.aio.batches.get(name=other.name)).state.value
        try:
            await sdk.aio.batches.get(name="batches/none")
        except errors.ClientError as exc:
            return states, results, cancelled, exc.code
        raise AssertionError("an unknown batch was found")

    with Emulator(default=lambda r: f"done {order_in(r)}") as emu:
        emu.batches.polls = 2
        states, results, cancelled, missing = asyncio.run(lifecycle(emu))
    assert states == ["JOB_STATE_PENDING", *["JOB_STATE_RUNNING"] * 3, "JOB_STATE_SUCCEEDED"]
    answers = {
        item["key"]: item["response"]["candidates"][0]["content"]["parts"][0]["text"]
        for item in map(json.loads, results.splitlines())
    }
    assert answers == {"r1": "done 1", "r2": "done 2"}
    assert cancelled == "JOB_STATE_CANCELLED" and missing == 404


@pytest.mark.parametrize("instant", [False, True])
def test_an_instant_emulated_batch_is_done_at_its_first_retrieve_through_each_sdk(instant: bool):
    """`emu.batches.instant` (the docs' examples set it): no states between, for every batch API."""
    import anthropic
    import openai
    from google import genai

    with Emulator(default="ok") as emu:
        emu.batches.instant = instant
        oai = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="k")
        line = {"custom_id": "r1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m"}}
        upload = oai.files.create(file=("b.jsonl", json.dumps(line).encode()), purpose="batch")
        created = oai.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        claude = anthropic.Anthropic(base_url=emu.base_url, api_key="k")
        params = {
            "model": "claude-haiku-4-5",
            "max_tokens": 5,
            "messages": [{"role": "user", "content": "hi"}],
        }
        message_batch = claude.messages.batches.create(requests=[{"custom_id": "r1", "params": params}])
        gemini = genai.Client(api_key="k", http_options={"base_url": emu.base_url})
        request = {"key": "r1", "request": {"contents": [{"parts": [{"text": "hi"}]}]}}
        source = gemini.files.upload(
            file=io.BytesIO(json.dumps(request).encode()), config={"mime_type": "application/jsonl"}
        )
        job = gemini.batches.create(model="gemini-2.5-flash", src=source.name)
        first = (
            oai.batches.retrieve(created.id).status,
            claude.messages.batches.retrieve(message_batch.id).processing_status,
            gemini.batches.get(name=job.name).state.value,
        )
    if instant:
        assert first == ("completed", "ended", "JOB_STATE_SUCCEEDED")
    else:
        assert first == ("in_progress", "in_progress", "JOB_STATE_RUNNING")


def test_a_gemini_thought_signature_comes_back_in_the_next_round():
    from chainform.testing.emulator._gemini import thought_signature
    from chainform.types import TextReasoningContent

    first: dict[int, str] = {}

    def think_then_answer(request: RecordedRequest) -> Any:
        n = order_in(request)
        if tool_results(request) == 0:
            first[n] = thought_signature(request)
            return [TextReasoningContent("thinking"), tool_call("lookup", order=n)]
        call = next(p for c in request.json["contents"] for p in c["parts"] if "functionCall" in p)
        assert call.get("thoughtSignature") == first[n], call  # the signature on the part it came with
        return tool_call("final_result", id=n, total=n / 2)

    with Emulator(default=think_then_answer) as emu:
        results = run(emu, 3, API["gemini"])
        assert len(emu.batches.created) == 2
    assert all(r.ok and r.value["total"] == r.input["id"] / 2 for r in results), results


def test_a_google_genai_without_the_request_converter_fails_the_rows_with_a_typed_error(monkeypatch):
    from google.genai import models

    monkeypatch.delattr(models, "_GenerateContentParameters_to_mldev")
    with Emulator(default=answer) as emu:
        results = run(emu, 2, API["gemini"])
        assert emu.batches.created == []  # nothing sent
    assert len(results) == 2
    assert all(
        isinstance(r.error.exception, BatchError) and "google-genai" in r.error.message for r in results
    )


def test_a_gemini_attachment_travels_in_the_batch_file_as_its_bytes(tmp_path):
    import base64

    from PIL import Image

    image = tmp_path / "dot.png"  # a PNG that decodes (one the model reads is checked), of noisy
    Image.frombytes("L", (64, 64), bytes(range(256)) * 16).save(image)  # bytes: + and / in base64
    assert {"+", "/"} <= set(base64.b64encode(image.read_bytes()).decode())
    with Emulator(default=lambda r: f"done {order_in(r)}") as emu:
        model = API["gemini"].model_at(emu)
        rows_ = [{"text": "order 1", "img": str(image)}]
        results = list(model.map(rows_, prompt="Describe: {text}", attach="img", batch=True, batch_poll=0))
        parts = emu.batches.batches[emu.batches.created[0]].lines[0]["request"]["contents"][0]["parts"]
    inline = next(p["inlineData"] for p in parts if "inlineData" in p)
    assert base64.urlsafe_b64decode(inline["data"]) == image.read_bytes()
    assert (
        inline.get("mimeType") or inline.get("mime_type")
    ) == "image/png"  # as google-genai writes it live
    assert results[0].ok


@ALL
def test_recovery_never_adopts_another_runs_batch_of_the_same_size(api, monkeypatch, tmp_path):
    """X dies after logging its intent; Y (another log, the same size, another prompt) submits; X
    resumes: its rows get X's own answers from a batch of its own, never Y's."""
    from chainform._map._batch_log import batches_of
    from chainform._map._run import batch_api
    from chainform.store import Store

    def echo(request: RecordedRequest) -> Any:
        said = re.search(r"(Extract|Other): order (\d+)", json.dumps(request.json))
        return f"answer to {said.group(1)} {said.group(2)}"

    def run_x(emu: Emulator) -> list[Any]:
        model = api.model_at(emu)
        return list(
            model.map(
                rows(2), prompt="Extract: {text}", batch=True, batch_poll=0, transport_retries=0, run_id="x"
            )
        )

    with Emulator(default=echo) as emu:
        kind = type(batch_api(api.model_at(emu).client))
        submit = kind.submit

        async def dies(self: Any, lines: Any, intent: str) -> str:
            raise RuntimeError("killed after the intent was logged")

        monkeypatch.setattr(kind, "submit", dies)
        assert not any(r.ok for r in run_x(emu))  # X's intent is in its log, no batch id
        monkeypatch.setattr(kind, "submit", submit)
        home = Path(os.environ["CHAINFORM_HOME"])
        monkeypatch.setenv("CHAINFORM_HOME", str(tmp_path / "other-home"))  # Y: another log
        model = api.model_at(emu)
        assert all(r.ok for r in model.map(rows(2), prompt="Other: {text}", batch=True, batch_poll=0))
        monkeypatch.setenv("CHAINFORM_HOME", str(home))
        results = run_x(emu)
        created = len(emu.batches.created)
        with Store() as store:
            logged = batches_of(store, "x")
    assert sorted(r.text if r.ok else r.error.message for r in results) == [
        "answer to Extract 0",
        "answer to Extract 1",
    ]
    assert created == 2  # Y's, and X's own
    assert all(b.batch_id != emu.batches.created[0] or b.status == "foreign" for b in logged)


@pytest.mark.unit
def test_each_row_numbers_its_own_turns_through_its_own_sender() -> None:
    """A row's turns travel with the sender `BatchRounds.row` gives it (no context variable): two
    rows asking at once, one of them twice, get custom_ids `<key>-<turn>-<tag>` of their own."""
    from types import SimpleNamespace

    from chainform._map._batch import BatchRounds, run_tag
    from chainform.store import Store

    async def ask() -> list[str]:
        with Store() as store:
            rounds = BatchRounds(SimpleNamespace(provider="openai"), store, "run-1", 0, settle=3600.0)
            with rounds.row("a") as a, rounds.row("b") as b:
                asking = [asyncio.ensure_future(send({"n": n})) for n, send in enumerate([a, b, a])]
                await asyncio.wait(asking, timeout=0)  # each parks its request; none is answered
                parked = sorted(rounds.pending)
                for task in asking:
                    task.cancel()
            if rounds._timer is not None:
                rounds._timer.cancel()
            return parked

    tag = run_tag("run-1")
    assert asyncio.run(ask()) == [f"a-0-{tag}", f"a-1-{tag}", f"b-0-{tag}"]
