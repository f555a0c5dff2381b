"""`chainform map status RUN` and `chainform map cancel RUN`: a batch run's provider batches.

A `map --batch` run can be left (Ctrl-C, a closed terminal): its batches go on at the provider.
These read the run's batches from the log (_map/_batch_log.py) and ask the provider about them
through the same batch API the run used (`-m`, `--key` and `--base-url` as for the run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from chainform.cli._options import model_option
from chainform.cli._output import echo_untrusted


def _batch_options(command: Any) -> Any:
    command = click.option("--base-url", help="Provider endpoint, as given to the run.")(command)
    command = click.option("--key", help="API key (else environment, else `chainform keys set`).")(command)
    command = model_option("The run's model (default as for `chainform`).")(command)
    return click.argument("run_id", metavar="RUN")(command)


def _run_batches(run_id: str) -> tuple[Any, list[Any]]:
    from chainform._map._batch_log import batches_of
    from chainform.store import Store

    store = Store()
    batches = batches_of(store, run_id)
    if not batches:
        store.close()
        raise click.BadParameter(f"no batch of a map run {run_id!r} is in the log", param_hint="RUN")
    return store, batches


def _api(model_name: str | None, key: str | None, base_url: str | None) -> Any:
    from chainform.cli._models import default_model
    from chainform.models import get_async_model

    return check_batch(get_async_model(model_name or default_model(), key=key, base_url=base_url))


def _on_batches(run_id: str, model_name: str | None, key: str | None, base_url: str | None, work: Any) -> Any:
    """`await work(store, batches, api)` on a run's batches; the log is closed after."""
    import asyncio  # not at import: `chainform --help` loads no asyncio

    store, batches = _run_batches(run_id)
    try:
        return asyncio.run(work(store, batches, _api(model_name, key, base_url)))
    finally:
        store.close()


@click.command(name="status")
@_batch_options
def map_status(run_id: str, model_name: str | None, key: str | None, base_url: str | None) -> None:
    """Show the provider batches of a `map --batch` run: round, batch id, state, rows done (where
    the provider counts them: Gemini's batches say no counts)."""

    from chainform._map._batch_log import ADOPTED, adopt

    async def show(store: Any, batches: list[Any], api: Any) -> None:
        for batch in batches:
            if batch.batch_id is None and not await adopt(store, api, batch):
                click.echo(f"round {batch.round}  (intent {batch.id}: no batch at the provider carries it)")
                continue
            state = await api.poll(batch.batch_id)
            counts = f"{state.completed}/{state.total} done, {state.failed} failed" if state.total else ""
            trial = "(found by its intent: on trial)" if batch.status == ADOPTED else ""
            echo_untrusted(
                f"round {batch.round}  {batch.batch_id}  {state.status}  {counts}  {trial}".rstrip()
            )

    _on_batches(run_id, model_name, key, base_url, show)


@click.command(name="cancel")
@_batch_options
def map_cancel(run_id: str, model_name: str | None, key: str | None, base_url: str | None) -> None:
    """Cancel the unfinished provider batches of a `map --batch` run (`--resume` sends their rows again)."""
    from chainform._map._batch_log import ADOPTED, adopt, record_status
    from chainform.clients._openai_batch import TERMINAL
    from chainform.errors import ProviderError

    async def cancel(store: Any, batches: list[Any], api: Any) -> int:
        count = 0
        for batch in batches:
            if batch.status in TERMINAL:
                continue
            lost_id = batch.batch_id is None or batch.status == ADOPTED  # found by intent only
            if lost_id and not getattr(api, "finds_exactly", True):
                click.echo(
                    f"round {batch.round}  ({batch.batch_id or f'intent {batch.id}'}: its batch id never "
                    f"reached the log, and {api.provider}'s batches carry no intent id: which is this run's "
                    "is known only from its results; cancel it at the provider)",
                    err=True,
                )
                continue
            if batch.batch_id is None and not await adopt(store, api, batch):
                continue
            state = await api.poll(batch.batch_id)  # it may have ended since the log last heard of it
            status = state.status
            if not state.ended:
                try:
                    status = await api.cancel(batch.batch_id)
                except ProviderError as exc:  # ended between the poll and the cancel: said below
                    if exc.kind != "bad_request" and exc.status not in (400, 409):
                        raise
                    state = await api.poll(batch.batch_id)
            if state.ended:
                status = state.status
                echo_untrusted(f"round {batch.round}  {batch.batch_id}  already {status}: nothing to cancel")
            else:
                echo_untrusted(f"round {batch.round}  {batch.batch_id}  {status}")
                count += 1
            if batch.status != ADOPTED:  # on trial: the log keeps it so until its results are read
                batch.status = status
                record_status(store, batch)
        return count

    if not _on_batches(run_id, model_name, key, base_url, cancel):
        click.echo(f"map: no batch of run {run_id} is still running", err=True)


SUBCOMMANDS = {"status": map_status, "cancel": map_cancel}


class MapCommand(click.Command):
    """`map INPUT ...`, and `map status RUN` / `map cancel RUN` (cli/_map_batch.py) beside it."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        if args and args[0] in ("status", "cancel"):
            name = f"{info_name} {args[0]}"
            return SUBCOMMANDS[args[0]].make_context(name, list(args[1:]), parent=parent, **extra)
        from chainform.cli._map_args import old_output_spelling

        return super().make_context(info_name, old_output_spelling(self, list(args)), parent=parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        return ctx.command.invoke(ctx) if ctx.command is not self else super().invoke(ctx)


def logged_run_id(output: str, resume: bool) -> str | None:
    """A resumed run's id, from the log, when OUTPUT holds no row yet (killed before its first row
    ended, or a batch run in round 1): its rows' chains and batches are found by it."""
    if not resume:
        return None
    from chainform._map._batch_log import run_of
    from chainform.store import Store

    with Store() as store:
        return run_of(store, str(Path(output).resolve()))


def record_output_run(output: str, run_id: str) -> None:
    """Log which run writes OUTPUT (the resume of a run killed before its first row finds it)."""
    from chainform._map._batch_log import record_run
    from chainform.store import Store

    with Store() as store:
        record_run(store, str(Path(output).resolve()), run_id)


def check_batch(model: Any) -> Any:
    """The model's batch API; for a provider without one, a usage error naming those with one."""
    from chainform._map._run import batch_api
    from chainform.errors import BatchError

    try:
        return batch_api(model.client)
    except BatchError as exc:
        raise click.UsageError(str(exc)) from None
