"""`chainform eval DATA --schema S -p '... {field} ...' -m A -m B --strategy native --strategy deferred`:
is the valid answer also right? Each model x strategy x prompt cell is a map run; every field of
every row is scored against the row's expected answer. `eval show ID` renders a kept report again,
`eval compare A B` says what changed between two cells or two evals (docs/evals.md)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import click
import click_default_group

from chainform._bounds import MAX_CONCURRENCY, MAX_REPEAT
from chainform.cli._exit import ExitCode, exit_with
from chainform.cli._failures import Allowance, Failures, allow_failures_option, check_fields
from chainform.cli._money import apply_price, money_options
from chainform.cli._options import (
    STRATEGY_CHOICES,
    count_option,
    model_options_option,
    provider_options,
    rate_options,
)
from chainform.cli._output import echo_untrusted, shorten
from chainform.cli._prompt import FALLBACK_HELP, parse_options


class _EvalGroup(click_default_group.DefaultGroup):  # type: ignore[misc]  # untyped library
    """`eval DATA ...` runs an eval; `eval show` and `eval compare` are subcommands."""


def _eval_group() -> None:
    """Measure how often answers are right: field accuracy, cost per correct row, strategy vs strategy.

    \b
    chainform eval DATA --schema S -p 'Extract: {text}' -m A -m B --strategy native --strategy deferred
    chainform eval show ID
    chainform eval list
    chainform eval compare ID#1 ID#2
    (`chainform eval run --help`: every option; docs/evals.md)
    """


eval_group: click.Group = click.group(name="eval", cls=_EvalGroup, default="run", default_if_no_args=False)(
    _eval_group
)


def _bad_input(exc: Exception) -> click.exceptions.Exit:
    echo_untrusted(f"Error: {' '.join(str(exc).split())}", err=True)  # it may quote the data
    return exit_with(ExitCode.USAGE)


def _tolerances(pairs: tuple[str, ...]) -> tuple[dict[str, Any], Any]:
    """`FIELD=TOL` pairs, and a bare `TOL` as the default for every number field; a TOL is
    relative (`0.01`) or absolute (`abs:0.01`); two for one field allow what either allows."""
    from chainform.evals import Tolerance

    per_field: dict[str, Tolerance] = {}
    default = Tolerance()
    for pair in pairs:
        name, sep, value = pair.partition("=") if "=" in pair else ("", "", pair)
        try:
            tolerance = Tolerance.parse(value)
        except ValueError:
            raise click.BadParameter(
                f"{pair!r}: give FIELD=TOL or TOL, a relative one (total=0.01) or an absolute one "
                "(total=abs:0.01)",
                param_hint="--tolerance",
            ) from None
        if sep:
            per_field[name] = per_field[name] | tolerance if name in per_field else tolerance
        else:
            default = default | tolerance
    return per_field, default


def _ratios(values: tuple[str, ...], option: str, example: str) -> dict[str, float]:
    """`R` and `FIELD=R` values of `option`, R from 0 to 1: by field, a bare R under the key `*`."""
    out: dict[str, float] = {}
    for value in values:
        name, sep, text = value.rpartition("=")
        try:
            number = float(text)
        except ValueError:
            number = -1.0
        if not 0 <= number <= 1 or (sep and not name):
            raise click.BadParameter(
                f"{value!r}: give R or FIELD=R with R from 0 to 1, e.g. {example}", param_hint=option
            )
        out[name if sep else "*"] = number
    return out


def _rubrics(values: tuple[str, ...]) -> dict[str, str]:
    """`--rubric FIELD="text"` values, by field."""
    out: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name.strip() or not text.strip():
            raise click.BadParameter(
                f'{value!r}: give FIELD="the rubric", e.g. summary="names the product"', param_hint="--rubric"
            )
        out[name.strip()] = text.strip()
    return out


def _fuzzy(values: tuple[str, ...]) -> float | dict[str, float] | None:
    """`--fuzzy R` (every string field) and `--fuzzy FIELD=R` (that field): a rapidfuzz ratio."""
    per_field = _ratios(values, "--fuzzy", "0.9 or vendor=0.8")
    if list(per_field) == ["*"]:
        return per_field["*"]
    return per_field or None


def _floors(specs: tuple[str, ...]) -> tuple[float | None, dict[str, float]]:
    """`--fail-under` values: a bare `R` (every cell's field accuracy) and `FIELD=R` pairs."""
    per_field = _ratios(specs, "--fail-under", "0.9 or total=0.95")
    return per_field.pop("*", None), per_field


def fail_under_option(command: Any) -> Any:
    return click.option(
        "--fail-under",
        "fail_under",
        multiple=True,
        metavar="[FIELD=]R",
        help="CI gate: exit 6 when a cell's field accuracy (or FIELD's) is below R (0..1); repeatable.",
    )(command)


def gate(report: Any, fail_under: tuple[str, ...]) -> None:
    """Exit 7 when --max-cost left rows unrun, else 6 when a figure is below its --fail-under floor
    (each shortfall on its own stderr line); return when neither."""
    overall, per_field = _floors(fail_under)
    problems = report.shortfalls(field_accuracy=overall) if overall is not None else []
    if per_field:
        problems += report.shortfalls(field_accuracy=per_field)
    for problem in problems:
        click.echo(f"eval: below --fail-under: {problem}", err=True)
    if report.stopped_by_cost:
        not_run = sum(c.n - len(c.ran) for c in report.cells)
        click.echo(
            f"eval: --max-cost stopped eval {report.eval_id} with {not_run} rows not run; "
            "--resume with a higher cap runs them",
            err=True,
        )
        raise exit_with(ExitCode.COST_CAP)
    if problems:
        raise exit_with(ExitCode.BELOW_FLOOR)


@eval_group.command(name="run")
@click.argument("data", metavar="DATA")
@click.option("--schema", required=True, help="Output schema: JSON, a .json file or the concise DSL.")
@click.option(
    "-p",
    "--prompt",
    "prompts",
    multiple=True,
    required=True,
    help="Prompt template, e.g. 'Extract: {text}'; repeat for variants.",
)
@click.option(
    "-m", "--model", "models", multiple=True, required=True, help="Model; repeat to compare models."
)
@click.option(
    "--strategy",
    "strategies",
    type=click.Choice(list(STRATEGY_CHOICES)),
    multiple=True,
    help="Output strategy; repeat to compare (default auto).",
)
@click.option(
    "--expected",
    default="expected",
    show_default=True,
    help="The field of each row holding its expected answer.",
)
@click.option(
    "--expected-tools",
    default="expected_tools",
    show_default=True,
    help="The field of each row holding its expected tool calls (a list, or {sequence|set|counts: ...}).",
)
@click.option("--id-field", help="Key rows by this field (default: the row's position).")
@click.option(
    "--tolerance",
    "tolerances",
    multiple=True,
    metavar="FIELD=TOL",
    help="Tolerance of a number field: relative (total=0.01) or absolute (total=abs:0.01); a bare TOL: "
    "every number field; repeatable.",
)
@click.option(
    "--fuzzy",
    "fuzzy_values",
    multiple=True,
    metavar="[FIELD=]R",
    help="A string is also right at this rapidfuzz ratio (0..1): every string field, or FIELD=R; repeatable.",
)
@click.option(
    "--judge", help="A model that decides the free-text fields the rules score wrong (off by default)."
)
@click.option(
    "--judge-field",
    "judge_fields",
    multiple=True,
    help="A free-text field for --judge (default: all); repeatable.",
)
@fail_under_option
@click.option(
    "--rubric",
    "rubrics",
    multiple=True,
    metavar='FIELD="..."',
    help="The judge (--judge, else the first model) passes or fails a free-text FIELD on this rubric; "
    "no expected value needed; repeatable.",
)
@click.option("--judge-key", help="The judge's API key (else the models' when it is of their provider).")
@click.option(
    "--judge-base-url", help="The judge's endpoint (else the models' when it is of their provider)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--html", "html_path", type=click.Path(dir_okay=False), help="Write a self-contained HTML report here."
)
@click.option(
    "--csv", "csv_path", type=click.Path(dir_okay=False), help="Write every row's every field as CSV here."
)
@click.option("--resume", is_flag=True, help="Continue the newest eval of this data with these settings.")
@click.option("--retry-failed", is_flag=True, help="With --resume: run again the rows whose chain failed.")
@count_option(
    "--repeat",
    minimum=1,
    maximum=MAX_REPEAT,
    default=1,
    help="Runs of each row: the report adds pass@k, pass^k and agreement.",
)
@count_option(
    "--concurrency", minimum=1, maximum=MAX_CONCURRENCY, default=8, help="Rows at once, over every cell."
)
@rate_options("per cell")
@count_option(
    "--max-rows", minimum=1, default=100_000, help="Most rows DATA may hold (more: refused before any call)."
)
@click.option("--limit", type=click.IntRange(min=1), help="Use only the first N rows of DATA.")
@allow_failures_option
@money_options("Stop starting rows once the eval has cost this (USD); --resume runs the rest.")
@click.option("-T", "--tool", "tool_names", multiple=True, help="Tool by name; repeatable.")
@click.option("--functions", multiple=True, help="Python file or code whose functions become tools.")
@model_options_option
@click.option(
    "-n",
    "--no-log",
    is_flag=True,
    help="Do not write the chains to the log (the report then has no calls or latency).",
)
@click.option("--fallback", multiple=True, help=FALLBACK_HELP)
@click.option("--batch", is_flag=True, help="Send each cell's rows through the provider's batch API.")
@click.option(
    "--attach",
    "attach_field",
    metavar="FIELD",
    help="Attach the path(s) or URL(s) in this field of each row.",
)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), help="DATA format.")
@click.option("-s", "--system", help="System prompt.")
@click.option("--key", help="API key (else environment, else `chainform keys set`).")
@click.option("--base-url", help="Provider endpoint (OpenAI-compatible servers, proxies).")
@provider_options
def eval_run(
    data: str,
    schema: str,
    prompts: tuple[str, ...],
    models: tuple[str, ...],
    strategies: tuple[str, ...],
    expected: str,
    expected_tools: str,
    id_field: str | None,
    tolerances: tuple[str, ...],
    fuzzy_values: tuple[str, ...],
    judge: str | None,
    judge_fields: tuple[str, ...],
    rubrics: tuple[str, ...],
    judge_key: str | None,
    judge_base_url: str | None,
    fail_under: tuple[str, ...],
    as_json: bool,
    html_path: str | None,
    csv_path: str | None,
    resume: bool,
    retry_failed: bool,
    repeat: int,
    concurrency: int,
    rpm: float | None,
    tpm: float | None,
    transport_retries: int,
    max_rows: int,
    limit: int | None,
    allowance: Allowance,
    price: tuple[Decimal, Decimal] | None,
    max_cost: Decimal | None,
    tool_names: tuple[str, ...],
    functions: tuple[str, ...],
    option_pairs: tuple[tuple[str, str], ...],
    no_log: bool,
    fallback: tuple[str, ...],
    batch: bool,
    attach_field: str | None,
    fmt: str | None,
    system: str | None,
    key: str | None,
    base_url: str | None,
    provider_settings: dict[str, Any],
) -> None:
    """Score every model x strategy x prompt on DATA (JSONL or CSV rows, each with its expected answer)."""
    from chainform._map._inputs import format_of, read_file
    from chainform.errors import SchemaError
    from chainform.evals import EvalInputError, EvalInterruptedError, evaluate
    from chainform.schema import resolve_schema

    if not Path(data).is_file():
        raise click.BadParameter(f"cannot read {data!r}", param_hint="DATA")
    for path, option in ((html_path, "--html"), (csv_path, "--csv")):
        if path is not None:
            writable(path, option)
    if id_field is not None:  # both line numbers, before any call
        from chainform._map._inputs import MapInputError, check_unique_ids, read_numbered

        try:
            check_unique_ids(read_numbered(data, fmt), id_field, f"{data}: lines")
        except MapInputError as exc:
            raise _bad_input(exc) from None
    per_field, default = _tolerances(tolerances)
    fuzzy = _fuzzy(fuzzy_values)
    options: dict[str, Any] = {
        "concurrency": concurrency,
        "system": system,
        "requests_per_minute": rpm,
        "tokens_per_minute": tpm,
        "transport_retries": transport_retries,
        "log": not no_log,
    }
    if tool_names or functions:
        from chainform.cli._tools import cli_tools

        options["tools"] = cli_tools(tool_names, functions)
    if option_pairs:
        options["options"] = parse_options(option_pairs)
    if price is not None:
        for name in models:
            apply_price(name, price)

    _floors(fail_under)  # a bad floor is a usage error before any call
    if batch:
        options["batch"] = True
    if attach_field is not None:
        options |= {"attach": attach_field, "attach_base": Path(data).resolve().parent}
    model_options: dict[str, Any] = {"key": key, "base_url": base_url, **provider_settings}
    if fallback:
        model_options["fallback"] = list(fallback)
    items = read_file(data, fmt)
    if (fmt or format_of(data)) == "csv":
        items = json_cells(items, expected)
    if limit is not None:
        items = itertools.islice(items, limit)
    items = check_fields(prompts, items, ignore=expected)  # a field the first row lacks: refused now
    from chainform.cli._eval_progress import EvalBars, load_step
    from chainform.models import get_model

    try:
        spec = resolve_schema(schema)
        _check_floor_fields(spec, fail_under)
        for name in dict.fromkeys(models):  # an in-process model loads as a step, before the bars
            load_step("eval", name, get_model(name, **model_options).client)
        with EvalBars() as bars:
            report = evaluate(
                items,
                schema=spec,
                prompt=list(prompts),
                models=list(models),
                strategies=list(strategies) or ["auto"],
                expected=expected,
                expected_tools=expected_tools,
                id_field=id_field,
                tolerance=per_field,
                default_tolerance=default,
                fuzzy=fuzzy,
                resume=resume,
                max_rows=max_rows,
                max_cost=max_cost,
                model_options=model_options,
                judge=judge,
                judge_fields=list(judge_fields) or None,
                repeat=repeat,
                retry_failed=retry_failed,
                rubric=_rubrics(rubrics),
                judge_options={"key": judge_key, "base_url": judge_base_url},
                progress=bars,
                **options,
            )
    except (EvalInputError, SchemaError) as exc:
        raise _bad_input(exc) from None
    except EvalInterruptedError as exc:
        click.echo(f"eval: {exc}", err=True)
        raise exit_with(ExitCode.INTERRUPTED) from None
    _show(report, as_json, html_path, csv_path)
    failures = Failures()
    for cell in report.cells:
        for row in cell.rows:
            if row.error is not None and row.error_phase != "not-run":  # not run: --max-cost, for --resume
                failures.add(row.error_phase or "internal", shorten(row.error, 120))
    total = sum(len(cell.rows) for cell in report.cells)
    if fail_under:  # the floors decide: a failed row already counts as wrong in their figures
        failures.say("eval", total)
    gate(report, fail_under)
    if not fail_under:
        failures.finish("eval", total, allowance)


def _check_floor_fields(schema: Any, fail_under: tuple[str, ...]) -> None:
    """A --fail-under FIELD the report will not have is bad input, refused before any call."""
    from chainform.evals import EvalInputError, compile_plan
    from chainform.evals._plan import field_paths

    _overall, per_field = _floors(fail_under)
    paths = field_paths(compile_plan(schema))
    for name in per_field:
        if name not in paths:
            raise EvalInputError(
                f"--fail-under names {name!r}, which is no field of the report (fields: {', '.join(paths)})"
            )


def json_cells(rows: Iterable[Any], expected: str) -> Iterator[Any]:
    """CSV rows with their `expected` cell read as JSON text (a cell that is no JSON stays text)."""
    from chainform._json import load_json
    from chainform.errors import JSONLimitError

    for row in rows:
        text = row.get(expected) if isinstance(row, dict) else None
        if isinstance(text, str):
            try:
                row = {**row, expected: load_json(text)}
            except JSONLimitError as exc:
                row = exc
            except ValueError:
                pass
        yield row


def writable(path: str, option: str) -> None:
    """Refuse (exit 2, before any call) a report path whose folder is missing or not writable."""
    import tempfile

    target = Path(path)
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise click.BadParameter(f"{path!r} is not a UTF-8 file name", param_hint=option) from None
    if target.is_dir():
        raise click.BadParameter(f"{path} is a directory: give a file", param_hint=option)
    try:
        with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"):
            pass
    except OSError as exc:
        raise click.BadParameter(
            f"cannot write {path}: {exc.strerror or exc} (in {target.parent.resolve()})", param_hint=option
        ) from None


def write_report(path: str, text: str) -> None:
    """Write whole or not at all (a copy renamed over the old file); a character UTF-8 cannot
    encode (a lone surrogate in a model's answer or a row's key) is written escaped (`\\ud800`)."""
    import os

    target = Path(path)
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temp.write_text(text, encoding="utf-8", errors="backslashreplace")
    os.replace(temp, target)


def _show(report: Any, as_json: bool, html_path: str | None, csv_path: str | None = None) -> None:
    if html_path is not None:
        from chainform.evals._html import html

        write_report(html_path, html(report))
    if csv_path is not None:
        from chainform.evals._csv import csv_text

        write_report(csv_path, csv_text(report))
    if as_json:
        click.echo(json.dumps(report.to_dict(), default=str))
        return
    from chainform.cli._output import console, untrusted
    from chainform.evals._table import render

    render(report, console(), untrusted=untrusted)
    for path in (html_path, csv_path):
        if path is not None:
            click.echo(f"eval: report written to {path}", err=True)
    click.echo(f"eval: {report.eval_id} (`chainform eval show {report.eval_id}` shows it again)", err=True)


@eval_group.command(name="list")
@click.option("-n", "--count", type=click.IntRange(min=0), default=0, help="The newest N evals (0: all).")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def eval_list(count: int, as_json: bool) -> None:
    """List the kept evals, newest first: id, when, and each cell's rows right."""
    import datetime as dt

    from chainform.evals import EvalInputError, load_report
    from chainform.evals._keep import kept_evals

    listed: list[dict[str, Any]] = []
    for eval_id, when in kept_evals()[: count or None]:
        try:
            report = load_report(eval_id)
        except EvalInputError as exc:  # a damaged report is listed with why, not the end of the list
            listed.append({"id": eval_id, "when": when, "error": str(exc), "cells": []})
            continue
        cells = [
            {"name": cell.name, "rows": len(cell.rows), "right": sum(row.right for row in cell.rows)}
            for cell in report.cells
        ]
        listed.append({"id": eval_id, "when": when, "cells": cells})
    if as_json:
        click.echo(json.dumps(listed))
        return
    if not listed:
        click.echo("No kept eval yet (`chainform eval DATA ...` runs one).", err=True)
    for item in listed:
        stamp = dt.datetime.fromtimestamp(item["when"]).strftime("%Y-%m-%dT%H:%M:%S")
        summary = "; ".join(f"{c['name']}: {c['right']}/{c['rows']} right" for c in item["cells"])
        echo_untrusted(f"{item['id']}  {stamp}  {item.get('error') or summary}")


@eval_group.command(name="show")
@click.argument("eval_id", metavar="ID")
@fail_under_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--html", "html_path", type=click.Path(dir_okay=False), help="Write a self-contained HTML report here."
)
@click.option(
    "--csv", "csv_path", type=click.Path(dir_okay=False), help="Write every row's every field as CSV here."
)
def eval_show(
    eval_id: str, fail_under: tuple[str, ...], as_json: bool, html_path: str | None, csv_path: str | None
) -> None:
    """Render a kept eval report again (ID: the id an eval printed, or a unique prefix)."""
    from chainform.evals import EvalInputError, load_report

    _floors(fail_under)
    for path, option in ((html_path, "--html"), (csv_path, "--csv")):
        if path is not None:
            writable(path, option)
    try:
        report = load_report(eval_id)
        _check_floor_fields(report.schema, fail_under)
    except EvalInputError as exc:
        raise _bad_input(exc) from None
    _show(report, as_json, html_path, csv_path)
    gate(report, fail_under)


@eval_group.command(name="rescore")
@click.argument("eval_id", metavar="ID")
@click.argument("data", metavar="[DATA]", required=False)
@click.option(
    "--expected", help="The field of DATA's rows holding the expected answer (default: the eval's)."
)
@click.option(
    "--expected-tools",
    default="expected_tools",
    show_default=True,
    help="The field of DATA's expected tool calls.",
)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), help="DATA format.")
@click.option(
    "--tolerance", "tolerances", multiple=True, metavar="FIELD=TOL", help="As for `eval run`; repeatable."
)
@click.option(
    "--fuzzy", "fuzzy_values", multiple=True, metavar="[FIELD=]R", help="As for `eval run`; repeatable."
)
@fail_under_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--html", "html_path", type=click.Path(dir_okay=False), help="Write a self-contained HTML report here."
)
def eval_rescore(
    eval_id: str,
    data: str | None,
    expected: str | None,
    expected_tools: str,
    fmt: str | None,
    tolerances: tuple[str, ...],
    fuzzy_values: tuple[str, ...],
    fail_under: tuple[str, ...],
    as_json: bool,
    html_path: str | None,
) -> None:
    """Score a kept eval's answers again, with no model call: with other --tolerance / --fuzzy, or
    DATA holding corrected expected answers (the same rows). A new report, beside the old one."""
    from chainform._map._inputs import format_of, read_file
    from chainform.evals import EvalInputError, load_report, rescore

    _floors(fail_under)
    if html_path is not None:
        writable(html_path, "--html")
    if data is not None and not Path(data).is_file():
        raise click.BadParameter(f"cannot read {data!r}", param_hint="DATA")
    per_field, default = _tolerances(tolerances)
    try:
        _check_floor_fields(load_report(eval_id).schema, fail_under)
        rows = None
        if data is not None:
            rows = read_file(data, fmt)
            field = expected or str(load_report(eval_id).settings.get("expected", "expected"))
            rows = json_cells(rows, field) if (fmt or format_of(data)) == "csv" else rows
        report = rescore(
            eval_id, rows, expected=expected, expected_tools=expected_tools, tolerance=per_field,
            default_tolerance=default, fuzzy=_fuzzy(fuzzy_values),
        )  # fmt: skip
    except EvalInputError as exc:
        raise _bad_input(exc) from None
    _show(report, as_json, html_path)
    gate(report, fail_under)


def _cell(ref: str) -> tuple[str, Any]:
    """`ID` (an eval of one cell) or `ID#N` (its N-th cell, from 1): its label and the cell."""
    from chainform.evals import EvalInputError, load_report

    eval_id, _, number = ref.partition("#")
    report = load_report(eval_id)
    if not number:
        if len(report.cells) != 1:
            names = ", ".join(f"{ref}#{i}: {c.name}" for i, c in enumerate(report.cells, 1))
            raise EvalInputError(f"eval {eval_id} has {len(report.cells)} cells; name one ({names})")
        return f"{report.eval_id} ({report.cells[0].name})", report.cells[0]
    if not number.isdigit() or not 1 <= int(number) <= len(report.cells):
        raise EvalInputError(f"{ref!r}: eval {eval_id} has cells 1 to {len(report.cells)}")
    cell = report.cells[int(number) - 1]
    return f"{report.eval_id}#{int(number)} ({cell.name})", cell


@eval_group.command(name="compare")
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@count_option("--resamples", minimum=100, default=10_000, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=20240601, show_default=True, help="Seed of the bootstrap.")
@click.option("--force", is_flag=True, help="Compare even when A and B scored different expected answers.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def eval_compare(a: str, b: str, resamples: int, seed: int, force: bool, as_json: bool) -> None:
    """Compare B with A: rows right (paired bootstrap 95% interval, McNemar's exact test) and the
    fields that got better and worse. A and B: an eval ID, or ID#N for its N-th cell; both must
    have scored the same expected answers (--force to compare anyway)."""
    from chainform.evals import EvalInputError
    from chainform.evals._compare import compare

    try:
        (label_a, cell_a), (label_b, cell_b) = _cell(a), _cell(b)
        result = compare(
            cell_a, cell_b, seed=seed, resamples=resamples, labels=(label_a, label_b), force=force
        )
    except EvalInputError as exc:
        raise _bad_input(exc) from None
    if result.expected_differ:
        echo_untrusted(  # rows are named by the data set
            f"Warning: {len(result.expected_differ)} rows have other expected answers in B "
            f"({', '.join(result.expected_differ[:5])}); compared anyway (--force)",
            err=True,
        )
    if as_json:
        click.echo(json.dumps(result.to_dict()))
        return
    click.echo(f"A: {result.a}: {result.a_right}/{result.rows} rows right")
    click.echo(f"B: {result.b}: {result.b_right}/{result.rows} rows right")
    click.echo(
        f"B - A: {result.difference:+.1%} of rows right (95% CI {result.low:+.1%} to {result.high:+.1%}); "
        f"McNemar p = {result.p_value:.3g} ({result.only_a} right only in A, {result.only_b} only in B)"
    )
    for path, (before, after) in result.better_fields.items():
        click.echo(f"better: {path} {before:.1%} -> {after:.1%}")
    for path, (before, after) in result.worse_fields.items():
        click.echo(f"worse: {path} {before:.1%} -> {after:.1%}")
    if result.better_rows:
        echo_untrusted("better rows: " + ", ".join(result.better_rows))
    if result.worse_rows:
        echo_untrusted("worse rows: " + ", ".join(result.worse_rows))


__all__ = ["eval_group"]
