"""`chainform map INPUT -o OUT.jsonl --prompt '... {field} ...'`: one chain per row, resumable.

Rows stream from INPUT (JSONL, CSV, or one prompt per line; `-` is stdin) through `amap` (or Ray
Data with `--ray`), and each finished row is appended to OUT.jsonl as the input row plus `value`
or `error`. The file is the run's commit record: `--resume` skips every key already in it.
"""

from __future__ import annotations

import contextlib
import itertools
import shlex
from collections.abc import Iterator
from contextlib import aclosing
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from chainform._bounds import MAX_CONCURRENCY
from chainform._map import MAX_WAIT
from chainform.cli._attach import conversion_options, limit_options
from chainform.cli._failures import Allowance, allow_failures_option, check_fields
from chainform.cli._map_batch import MapCommand, check_batch, logged_run_id, record_output_run
from chainform.cli._map_progress import Tracker
from chainform.cli._money import apply_price, money_options
from chainform.cli._options import (
    Seconds,
    chain_limit_option,
    count_option,
    model_option,
    model_options_option,
    otel_option,
    provider_options,
    rate_options,
    retry_max_tokens_option,
    start_tracing,
    stop_at_option,
    strategy_option,
)
from chainform.cli._prompt import (
    FALLBACK_HELP,
    FALLBACK_KINDS,
    FALLBACK_ON_HELP,
    check_retry_max_tokens,
    check_stop_at,
    fallback_kwargs,
    fallback_value,
    model_arguments,
    open_log,
    parse_options,
)
from chainform.errors import ChainInterruptedError

if TYPE_CHECKING:
    from chainform._map._inputs import Row
    from chainform._map._settings import MapSettings
    from chainform.map import MapResult
    from chainform.models import AsyncModel
    from chainform.types import ConversionLimits


def map_model(name: str, *, key: str | None, base_url: str | None, **kwargs: Any) -> AsyncModel:
    """The async model; SDK retries off, so a 429 reaches the map and pauses the whole pool
    (`fallback=` models keep theirs: the map's gate holds only the first model's calls)."""
    from chainform.models import get_async_model

    with model_arguments():
        try:
            return get_async_model(name, key=key, base_url=base_url, max_retries=0, **kwargs)
        except TypeError:  # an in-process model has no SDK retries to turn off
            return get_async_model(name, key=key, base_url=base_url, **kwargs)


async def _run_local(model: AsyncModel, source: Iterator[Row], commit: Any, settings: MapSettings) -> None:
    from chainform.map import amap

    async with aclosing(amap(model, source, **settings.as_kwargs())) as results:
        async for result in results:
            commit(result)


ATTACH_HELP = (
    "Attach the path(s) or URL(s) in this field of each row (comma-separated; paths relative to INPUT's "
    "folder and refused outside it unless --attach-root names another)."
)


@click.command(name="map", cls=MapCommand)
@click.argument("input_path", metavar="INPUT")
@click.option(
    "--output",
    required=True,
    metavar="FILE",
    help="Output JSONL: each input row plus value or error (the old `-o FILE` still works, deprecated).",
)
@click.option(
    "-p", "--prompt", "template", help="Prompt template filled from each row, e.g. 'Sum up: {text}'."
)
@model_option("Model name or alias (default as for `chainform`).")
@click.option("--fallback", "fallback", multiple=True, callback=fallback_value, help=FALLBACK_HELP)
@click.option(
    "--fallback-on", "fallback_on", multiple=True, type=click.Choice(FALLBACK_KINDS), help=FALLBACK_ON_HELP
)
@otel_option
@click.option("-s", "--system", help="System prompt.")
@click.option("--schema", help="Output schema: JSON, a .json file, the concise DSL or a saved schema id.")
@click.option("-T", "--tool", "tool_names", multiple=True, help="Tool by name; repeatable.")
@click.option("--functions", multiple=True, help="Python file or code whose functions become tools.")
@count_option("--concurrency", minimum=1, maximum=MAX_CONCURRENCY, default=8, help="Rows at once.")
@click.option(
    "--ordered", is_flag=True, help="Write rows in input order (a slow row holds back those after it)."
)
@click.option("--limit", type=click.IntRange(min=1), help="Run only the first N rows of INPUT.")
@allow_failures_option
@rate_options("all workers")
@retry_max_tokens_option("a row's answer", "the row fails with phase 'truncated'")
@stop_at_option("a row's chain", "the row's value")
@click.option("--id-field", help="Key rows by this field (default: the row's position).")
@click.option(
    "--resume",
    is_flag=True,
    help="Continue a run: skip rows already in OUTPUT; a row stopped halfway goes on with its chain "
    "from the log (nothing logged is sent or run again); rows that ended in an error run again.",
)
@click.option(
    "--keep-errors", is_flag=True, help="With --resume: keep error rows as they are (do not retry them)."
)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv", "lines"]), help="INPUT format.")
@strategy_option
@chain_limit_option
@model_options_option
@click.option("--key", help="API key (else environment, else `chainform keys set`).")
@click.option("--base-url", help="Provider endpoint (OpenAI-compatible servers, proxies).")
@provider_options
@click.option("-n", "--no-log", is_flag=True, help="Do not write the chains to the log.")
@money_options("Stop starting rows once the run has cost this (USD); --resume runs the rest.")
@click.option(
    "--ray",
    "ray_address",
    is_flag=False,
    flag_value="local",
    default=None,
    metavar="[ADDRESS]",
    help="Run through Ray Data: a local Ray (bare --ray) or a cluster ADDRESS.",
)
@count_option(
    "--ray-workers", minimum=1, default=2, help="Ray workers, each running --concurrency rows at once."
)
@click.option("--attach", "attach_field", metavar="FIELD", help=ATTACH_HELP)
@click.option(
    "--attach-root",
    type=click.Path(exists=True, file_okay=False),
    metavar="DIR",
    help="The folder --attach paths are relative to and must stay inside (default: INPUT's folder).",
)
@click.option(
    "--batch",
    is_flag=True,
    help="Send the rows through the provider's batch API (OpenAI, Anthropic, Gemini; about half price, within 24h).",
)
@click.option(
    "--batch-poll",
    type=Seconds(min=0.01, max=3600),
    default=5.0,
    show_default=True,
    help="Seconds between polls of a batch (0.01 to 3600).",
)
@click.option(
    "--batch-wait",
    type=Seconds(min=1, max=7 * 86400),
    default=MAX_WAIT,
    show_default=True,
    help="Seconds a batch is polled before its rows fail (the batch goes on at the provider; --resume polls it again).",
)
@conversion_options
@limit_options
def map_command(
    input_path: str,
    output: str,
    template: str | None,
    model_name: str | None,
    fallback: tuple[str, ...],
    fallback_on: tuple[str, ...],
    retry_max_tokens: int | None,
    stop_at: tuple[str, ...],
    otel: bool,
    system: str | None,
    schema: str | None,
    tool_names: tuple[str, ...],
    functions: tuple[str, ...],
    concurrency: int,
    ordered: bool,
    limit: int | None,
    allowance: Allowance,
    rpm: float | None,
    tpm: float | None,
    transport_retries: int,
    id_field: str | None,
    resume: bool,
    keep_errors: bool,
    fmt: str | None,
    strategy: str,
    chain_limit: int,
    option_pairs: tuple[tuple[str, str], ...],
    key: str | None,
    base_url: str | None,
    provider_settings: dict[str, Any],
    no_log: bool,
    price: tuple[Decimal, Decimal] | None,
    max_cost: Decimal | None,
    ray_address: str | None,
    ray_workers: int,
    attach_field: str | None,
    attach_root: str | None,
    batch: bool,
    batch_poll: float,
    batch_wait: float,
    no_convert: bool,
    attachments_store: str,
    allow_private_urls: bool,
    conversion_limits: ConversionLimits | None,
) -> None:
    """Run a chain for every row of INPUT (JSONL, CSV, or `-`: one prompt per line).

    With --batch: `chainform map status RUN` and `chainform map cancel RUN` show and cancel the
    run's provider batches (RUN: the run id the summary prints)."""
    from chainform._map._inputs import (
        MapInputError,
        check_template,
        check_unique_ids,
        count_rows,
        read_file,
        read_numbered,
        record_of,
        rows,
    )
    from chainform._map._jsonl import JsonlSink, MapOutputError, line_for
    from chainform._map._settings import MapSettings
    from chainform.cli._models import default_model
    from chainform.cli._schemas import resolve_cli_schema
    from chainform.cli._tools import cli_tools
    from chainform.store import new_id

    if input_path != "-" and not _readable(input_path):
        raise click.BadParameter(f"cannot read {input_path!r}", param_hint="INPUT")
    try:
        if template is not None:
            check_template(template)
    except MapInputError as exc:
        raise click.BadParameter(str(exc), param_hint="--prompt") from None
    if id_field is not None and input_path != "-":  # stdin: a repeated id fails its own row
        try:
            check_unique_ids(read_numbered(input_path, fmt), id_field, f"{input_path}: lines")
        except MapInputError as exc:  # it quotes the data's ids
            from chainform.cli._output import untrusted

            raise click.BadParameter(untrusted(str(exc), err=True), param_hint="--id-field") from None
    items = read_file(input_path, fmt)
    if limit is not None:
        items = itertools.islice(items, limit)
    items = check_fields([template], items)  # a field the first row lacks: refused before any call
    store = open_log(required=not no_log, wanted=schema is not None)  # a damaged log stops here, not per row
    spec = resolve_cli_schema(schema, store=store) if schema else None
    tools = cli_tools(tool_names, functions)
    check_stop_at(stop_at, tools, mcp=False)
    check_retry_max_tokens(retry_max_tokens, parse_options(option_pairs))
    name = model_name or default_model()
    if price is not None:
        apply_price(name, price)
    budget = _budget((name, *fallback), max_cost, ray_address)
    start_tracing(otel)
    if fallback and ray_address is not None:
        raise click.UsageError("--fallback does not run with --ray yet")
    if ordered and ray_address is not None:
        raise click.UsageError("--ordered does not run with --ray")
    if attach_field is not None and ray_address is not None:
        raise click.UsageError("--attach does not run with --ray yet")
    model = None
    if ray_address is None:
        model = map_model(
            name, key=key, base_url=base_url, **fallback_kwargs(fallback, fallback_on), **provider_settings
        )
        if store is not None:
            model.log_to(store)  # the command's one log
    if batch and ray_address is not None:
        raise click.UsageError("--batch does not run with --ray")
    if batch:
        check_batch(model)  # before OUT is touched
    again = shlex.join(["chainform", "map", input_path, "-o", output])
    sink = JsonlSink(output, f"run the same command with --resume ({again} ... --resume)")
    if keep_errors and not resume:
        raise click.UsageError("--keep-errors only applies with --resume")
    locks = contextlib.ExitStack()  # one writer per OUT and per run, held until the command ends
    click.get_current_context().call_on_close(locks.close)
    _lock(locks, "out", output, output)  # beside OUT: one writer whatever CHAINFORM_HOME
    locks.callback(sink.close)  # OUT is closed, before its lock goes, however the command ends
    try:
        sink.prepare(resume=resume, retry_errors=not keep_errors)
    except MapOutputError as exc:
        raise click.BadParameter(str(exc), param_hint="--output") from None
    logged = batch or not no_log  # a resume finds the run (its rows' chains, its batches) by OUT
    run_id = sink.run_id or (logged_run_id(output, resume) if logged else None) or new_id()
    _lock(locks, "run", run_id, f"map run {run_id}")
    if logged:
        record_output_run(output, run_id)
    source = (row for row in rows(items, id_field) if row.key not in sink.done)
    attaching = attach_field is not None  # the attachment flags apply with --attach only
    base = Path(input_path).resolve().parent if input_path != "-" else Path.cwd()
    total = count_rows(input_path, fmt)
    total = min(total, limit) if total is not None and limit is not None else total
    tracker = Tracker(total, len(sink.done), sink.retried)
    tracker.budget = budget
    settings = MapSettings(
        prompt=template,
        system=system,
        tools=tools or None,
        schema=spec,
        concurrency=(None if concurrency == 8 else concurrency) if batch else concurrency,
        requests_per_minute=rpm,
        tokens_per_minute=tpm,
        transport_retries=transport_retries,
        log=not no_log,
        run_id=run_id,
        strategy=strategy,
        chain_limit=chain_limit,
        options=parse_options(option_pairs) or None,
        resume=resume and not no_log and ray_address is None,  # each unfinished row's chain goes on
        ordered=ordered,
        retry_max_tokens=retry_max_tokens,
        stop_at_tools=stop_at,
        max_cost=budget,
        batch=batch,
        batch_poll=batch_poll if batch else 5.0,
        batch_wait=batch_wait if batch else None,
        on_batch=tracker.batch_changed if batch else None,
        attach=attach_field,
        attach_base=(Path(attach_root).resolve() if attach_root is not None else base) if attaching else None,
        attach_limits=conversion_limits if attaching else None,
        convert=not (attaching and no_convert),
        attachments_store=attachments_store if attaching else "copy",
        allow_private_urls=attaching and allow_private_urls,
    )

    def commit(result: MapResult) -> None:
        sink.commit(line_for(result, run_id, record_of(result.input)))
        tracker.add(result)

    if model is not None:
        from chainform.cli._eval_progress import load_step

        load_step("map", name, model.client)  # a step of its own: the bar then counts rows, not the load
    try:
        with tracker:
            if ray_address is not None:
                from chainform.ray import run_job

                if resume:  # each worker logs into its own CHAINFORM_HOME, which the driver does not read
                    click.echo(
                        "map: with --ray, a row that stopped halfway starts over (its chain is in a "
                        "worker's log); resume without --ray to go on with it (docs/durable.md).",
                        err=True,
                    )

                for result in run_job(
                    ray_address,
                    source,
                    name,
                    key,
                    base_url,
                    ray_workers,
                    settings.as_kwargs(),
                    model_settings=provider_settings,
                ):
                    commit(result)
            else:
                import asyncio

                assert model is not None
                asyncio.run(_run_local(model, source, commit, settings))
    except (KeyboardInterrupt, ChainInterruptedError):  # Ctrl-C, or a tool's KeyboardInterrupt
        click.echo(
            f"map: run {run_id} interrupted after {tracker.done} rows; they are in {output}. "
            "Run the same command with --resume to continue"
            + (f"; `chainform map status {run_id}` shows its batches." if batch else "."),
            err=True,
        )
        raise
    finally:
        sink.close()
    click.echo(tracker.summary(output, run_id), err=True)
    tracker.failures.finish("map", tracker.done, allowance)


def _budget(names: tuple[str, ...], max_cost: Decimal | None, ray_address: str | None) -> Any:
    """The run's Budget for --max-cost; refused at once when a model's price is unknown."""
    if max_cost is None:
        return None
    if ray_address is not None:
        raise click.UsageError("--max-cost runs in one process: it cannot be used with --ray")
    from chainform.pricing import PRICES, Budget

    budget = Budget(max_cost)
    for name in names:
        budget.check_rate(PRICES.rate(name))
    return budget


def _lock(locks: contextlib.ExitStack, kind: str, name: str, what: str) -> None:
    """Hold the lock of a run id (`kind` "run") or of an output file ("out", its lock file beside
    it) until the command ends; a usage error when another process has it."""
    from chainform._map._lock import MapLockedError, beside, holding, holding_file

    try:
        held = (
            holding_file(beside(Path(name).resolve()), what) if kind == "out" else holding(kind, name, what)
        )
        locks.enter_context(held)
    except MapLockedError as exc:
        raise click.UsageError(str(exc)) from None


def _readable(path: str) -> bool:
    try:
        with open(path, "rb"):
            return True
    except OSError:
        return False
