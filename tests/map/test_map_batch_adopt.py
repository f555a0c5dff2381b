"""A batch whose id never reached the log, found at the provider by its intent, is adopted on trial
(`_map/_batch.py`): its results must name its run's custom_ids before its answers are used. The
trial is kept in the log, so that whoever found the batch (a run, `map status`, `map cancel`) a
later `--resume` still makes it. Anthropic's batches carry no intent id (found by size and time:
another run's batch may fit), so the tests play it there."""

from __future__ import annotations

import asyncio
from typing import Any

from click.testing import CliRunner
from test_map_batch import Api, _submit, answer, tagged, with_
from test_map_batch_faults import run, where

from chainform._map._batch_log import ADOPTED, FOREIGN, batches_of, record_intent
from chainform.cli import cli
from chainform.store import Store
from chainform.testing.emulator import Emulator


def left_intent_and_another_runs_batch(api: Api, emu: Emulator, store: Store) -> str:
    """Run x logged its first round's intent and died before the batch id; run y (another log)
    then submitted a batch of as many requests: the one batch that fits x's intent. Y's batch id."""
    record_intent(store, "x", api.model.split("/")[0], 1, tagged("x", "0-0", "1-0"))
    return asyncio.run(_submit(api.model_at(emu).client, "y-intent", 2, "y"))


def assert_resumed_on_its_own(results: list[Any], emu: Emulator, store: Store, foreign: str) -> None:
    assert sorted(r.key for r in results) == ["0", "1"]
    assert all(r.ok and r.value["total"] == r.input["id"] / 2 for r in results), [r.error for r in results]
    logged = {b.batch_id: b.status for b in batches_of(store, "x")}
    assert logged[foreign] == FOREIGN  # the trial found it was y's: never adopted again
    assert len(emu.batches.created) == 3  # y's, then x's own two rounds


@with_("anthropic")
def test_a_batch_map_status_found_is_still_on_trial_when_the_run_resumes(api):
    with Emulator(default=answer) as emu, Store() as store:
        foreign = left_intent_and_another_runs_batch(api, emu, store)
        status = CliRunner().invoke(cli, ["map", "status", "x", *where(api, emu)])
        assert status.exit_code == 0 and foreign in status.output, status.output
        assert batches_of(store, "x")[0].status == ADOPTED
        results = run(emu, 2, api, run_id="x", transport_retries=0)
        assert_resumed_on_its_own(results, emu, store, foreign)


@with_("anthropic")
def test_a_run_left_while_polling_an_adopted_batch_resumes_with_the_trial_and_cancel_spares_it(api):
    with Emulator(default=answer) as emu, Store() as store:
        emu.batches.hold = True
        foreign = left_intent_and_another_runs_batch(api, emu, store)
        left = run(emu, 2, api, run_id="x", transport_retries=0, batch_poll=0.01, batch_wait=0.2)
        assert all(not r.ok and "--batch-wait" in r.error.message for r in left)  # polled y's, then gave up
        assert batches_of(store, "x")[0].status == ADOPTED
        cancel = CliRunner().invoke(cli, ["map", "cancel", "x", *where(api, emu)])
        assert cancel.exit_code == 0 and "cancel it at the provider" in cancel.stderr, cancel.output
        assert emu.batches.batches[foreign].body["processing_status"] == "in_progress"  # y's goes on
        emu.batches.hold = False
        results = run(emu, 2, api, run_id="x", transport_retries=0)
        assert_resumed_on_its_own(results, emu, store, foreign)
