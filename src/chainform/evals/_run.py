"""`evaluate(rows, schema=..., prompt=..., models=[...])`: every model x strategy x prompt cell is a
`model.map` run over the rows; each finished row is committed to the cell's JSONL (the map's own
commit record, so `resume=True` runs each row exactly once), then every cell is scored from those
lines and the log's calls. Everything about the input is checked before the first call.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

from chainform._bounds import MAX_CONCURRENCY, MAX_REPEAT, check_count
from chainform.errors import ChainInterruptedError
from chainform.evals._cells import MapJob, read_lines, run_maps
from chainform.evals._errors import EvalInputError, EvalInterruptedError
from chainform.evals._eval_report import EvalReport
from chainform.evals._judge import apply_verdicts, free_text_fields, judge_job
from chainform.evals._keep import eval_dir, find_resumable, kept_settings, save_report, save_spec, spent
from chainform.evals._leaves import Tolerance
from chainform.evals._plan import Arr, Node, Options, Scorer, compile_plan, walk
from chainform.evals._report import Cell, RowResult, run_key
from chainform.evals._rubric import apply_rubric, optional_in, rubric_job
from chainform.evals._score import ABSENT, Outcome, score
from chainform.evals._tools import TOOLS, Call, Expectation
from chainform.evals._tools import judge as judge_tools
from chainform.evals._tools import parse as parse_tools

MAX_ROWS = 100_000
"""Rows one eval reads at most (`max_rows`, `--max-rows`): the data is read whole, to check every
expected answer before any call."""


@dataclass
class _Row:
    key: str
    inputs: dict[str, Any]
    expected: Any
    tools: Expectation | None = None


def evaluate(
    rows: Iterable[Any],
    *,
    schema: Any,
    prompt: str | Sequence[str],
    models: Sequence[Any],
    strategies: Sequence[str] = ("auto",),
    expected: str = "expected",
    expected_tools: str = "expected_tools",
    id_field: str | None = None,
    tolerance: Mapping[str, float | str | Tolerance] | None = None,
    default_tolerance: float | str | Tolerance = 0.0,
    fuzzy: float | Mapping[str, float] | None = None,
    scorers: Mapping[str, Scorer] | None = None,
    resume: bool = False,
    max_rows: int = MAX_ROWS,
    max_cost: float | str | Decimal | None = None,
    model_options: Mapping[str, Any] | None = None,
    judge: Any = None,
    judge_fields: Sequence[str] | None = None,
    repeat: int = 1,
    progress: EvalProgress | None = None,
    retry_failed: bool = False,
    rubric: Mapping[str, str] | None = None,
    judge_options: Mapping[str, Any] | None = None,
    **map_options: Any,
) -> EvalReport:
    """Run and score every cell; the report is also kept (`chainform eval show ID`).

    `rows`: dicts holding the prompt's `{fields}` and the `expected` answer. `models`: names (made with
    `get_model(name, **model_options)`) or models. `prompt`: one template or several (variants).
    `tolerance` (per field path) and `default_tolerance` for numbers: relative (`0.01`) or absolute
    (`"abs:0.01"`); `fuzzy` (0..1) a rapidfuzz ratio that counts as a right string, or one per field
    path (`{"vendor": 0.8, "*": 0.95}`, `*` for the others); `scorers` custom per field path. `resume=True`
    continues the newest eval asked with the same data and settings. `max_cost` (USD) caps the whole
    eval (rows not run are scored wrong as `not-run`; resume runs them). Other keyword arguments go to
    `model.map` (concurrency, retries, attach, attach_base, batch, system, tools, chain_limit, ...).
    `judge` (a model or its name; off by default) decides the free-text fields (`judge_fields`, else
    every plain string field) that the rules scored wrong (see `_judge`). `repeat=N` (1 to
    `MAX_REPEAT`; `concurrency` 1 to `MAX_CONCURRENCY`) runs each row N times: the report adds
    pass@k, pass^k and per-field agreement across the runs. `retry_failed=True`
    (with `resume=True`) runs again the rows whose chain failed. `rubric` ({field: rubric text}) has
    the judge (else the first model) pass or fail a free-text field on the rubric, with no expected
    value (see `_rubric`); `judge_options` (`key`, `base_url`) are the judge's own, else a judge of
    a model's provider gets the models'. Raises EvalInputError
    (bad rows, tolerance, scorer, a judge with no key) before any call. `progress` hears of each
    cell as it starts and of each row as it is scored.
    """
    from chainform.schema import resolve_schema

    spec_schema = resolve_schema(schema)
    plan = compile_plan(spec_schema, scoring_options(tolerance, default_tolerance, fuzzy, scorers))
    prompts = [prompt] if isinstance(prompt, str) else list(prompt)
    rubric = dict(rubric or {})
    graded = free_text_fields(plan, list(rubric), "--rubric") if rubric else []
    for name, text in rubric.items():
        if not isinstance(text, str) or not text.strip():
            raise EvalInputError(f"--rubric {name}: give the rubric's text, e.g. {name}='names the product'")
    checked = (
        optional_in(spec_schema, graded) if graded else spec_schema
    )  # rubric fields need no expected value
    data = read_rows(rows, checked, expected, id_field, max_rows, prompts, expected_tools)
    if any(row.tools is not None for row in data) and not map_options.get("log", True):
        raise EvalInputError(
            f"the rows' {expected_tools!r} are scored from the logged tool calls: an eval without the log cannot"
        )
    if not prompts or not models or not strategies:
        raise EvalInputError("an eval needs at least one prompt, one model and one strategy")
    if retry_failed and not resume:
        raise EvalInputError("retrying the failed rows is part of a resume: give resume=True (--resume)")
    check_count("repeat", repeat, 1, MAX_REPEAT, EvalInputError)
    if map_options.get("concurrency") is not None:
        check_count("concurrency", map_options["concurrency"], 1, MAX_CONCURRENCY, EvalInputError)
    names = [_name(m) for m in models]
    judged = free_text_fields(plan, judge_fields) if judge is not None else []
    judged = [name for name in judged if name not in rubric]  # a rubric field is judged on its rubric
    if rubric and judge is None:
        judge = models[0]  # no judge named: the (first) model judges its own rubric fields
    judge_model = _judge_model(judge, model_options or {}, names, judge_options or {})
    built = [_model(m, model_options or {}) for m in models]  # a model with no key fails before any call
    spec = (
        {
            "data": _digest(
                [(r.key, r.inputs, r.expected, *((r.tools.to_json(),) if r.tools else ())) for r in data]
            ),
            "schema": spec_schema,
            "prompts": prompts,
            "models": names,
            "strategies": list(strategies),
            "expected": expected,
            "judge": None if judge is None else [_name(judge), judged],
        }
        | ({"repeat": repeat} if repeat > 1 else {})
        | ({"rubric": rubric} if rubric else {})
    )
    scoring = (
        scoring_settings(tolerance, default_tolerance, fuzzy, scorers)
        | {
            "judge": None if judge is None else _name(judge),
            "judge_fields": judged,
        }
        | ({"rubric": rubric} if rubric else {})
    )
    eval_id = find_resumable(spec) if resume else None
    if resume and eval_id is None:
        raise EvalInputError("no earlier eval of this data with these settings to resume")
    if eval_id is not None:
        _check_scoring(eval_id, scoring)
    else:
        from chainform.store import new_id

        eval_id = new_id()
        save_spec(eval_id, spec)
    budget = None
    if max_cost is not None:
        from chainform.pricing import Budget

        budget = Budget(max_cost)
        if resume:  # what the eval spent before counts: a resume spends only what is left
            budget.spent = spent(eval_id)
    try:
        cells = _run_cells(
            eval_id, data, plan, spec_schema, prompts, names, built, list(strategies), resume, budget,
            map_options, repeat, retry_failed, progress,
        )  # fmt: skip
        _score_cells(eval_id, cells, data, plan, judge_model, judged, resume, budget, map_options, rubric)
    except (KeyboardInterrupt, ChainInterruptedError):
        raise EvalInterruptedError(eval_id) from None
    settings = {"expected": expected, "prompts": prompts, "id_field": id_field, "scoring": scoring}
    if max_cost is not None:
        settings["max_cost"] = str(max_cost)
    report = EvalReport(eval_id, spec_schema, cells, settings=settings)
    save_report(report)
    return report


def _run_cells(
    eval_id: str, data: Sequence[_Row], plan: Node, schema: dict[str, Any], prompts: Sequence[str],
    names: Sequence[str], built: Sequence[Any], strategies: Sequence[str], resume: bool, budget: Any,
    map_options: Mapping[str, Any], repeat: int, retry_failed: bool = False,
    progress: EvalProgress | None = None,
) -> list[Cell]:  # fmt: skip
    """Run every model x strategy x prompt cell's map, all at once within `concurrency` rows in
    flight; the cells, with no rows scored yet."""
    options = dict(map_options)
    concurrency = options.pop("concurrency", None) or 8
    cells: list[Cell] = []
    jobs: list[MapJob] = []
    arrays = [node.path for node in walk(plan) if isinstance(node, Arr)]
    if any(row.tools is not None for row in data):
        arrays.append(TOOLS)
    folder = eval_dir(eval_id, create=True)
    items = [(run_key(row.key, r), row.inputs) for row, r in _runs(data, repeat)]
    for model, name in zip(built, names, strict=True):
        for strategy in strategies:
            for prompt_index, template in enumerate(prompts):
                asked = {**options, "prompt": template, "schema": schema, "strategy": strategy}
                cell = Cell(name, strategy, template, "", [], arrays, repeats=repeat)
                cell.prompt_label = f"prompt {prompt_index + 1}" if len(prompts) > 1 else ""
                hooks = _progress_hooks(progress, len(cells), cell.name, plan, data, repeat)
                jobs.append(MapJob(model, folder / f"cell-{len(cells)}.jsonl", items, asked, **hooks))
                cells.append(cell)
    run_ids = run_maps(jobs, concurrency=concurrency, resume=resume, retry_failed=retry_failed, budget=budget)
    for cell, run_id in zip(cells, run_ids, strict=True):
        cell.run_id = run_id
    return cells


class EvalProgress(Protocol):
    """What an eval says while it runs (the CLI's progress bars). The cells run at once: the calls
    of different cells interleave, and come from the eval's event loop thread."""

    def cell(self, index: int, name: str, rows: int, done: int) -> None:
        """Cell `index` starts: `rows` runs of rows in all, `done` of them already (a resume)."""

    def row(self, index: int, result: RowResult) -> None:
        """A run of a row of cell `index` finished, scored."""


def _progress_hooks(
    progress: EvalProgress | None, index: int, name: str, plan: Node, data: Sequence[_Row], repeat: int
) -> dict[str, Any]:
    """A MapJob's on_start/on_line for `progress` (nothing when there is none)."""
    if progress is None:
        return {}
    runs = {run_key(row.key, r): (row, r) for row, r in _runs(data, repeat)}

    def on_start(done: set[str]) -> None:
        progress.cell(index, name, len(runs), len(done & runs.keys()))

    def on_line(line: dict[str, Any]) -> None:
        found = runs.get(str(line["_map"]["key"]))
        if found is not None:
            progress.row(index, _scored(plan, found[0], line, found[1]))

    return {"on_start": on_start, "on_line": on_line}


def scoring_options(
    tolerance: Mapping[str, float | str | Tolerance] | None,
    default_tolerance: float | str | Tolerance,
    fuzzy: float | Mapping[str, float] | None,
    scorers: Mapping[str, Scorer] | None,
) -> Options:
    """The Options of `evaluate`'s scoring arguments (`fuzzy` by field: `*` for the others)."""
    fuzzy_fields = dict(fuzzy) if isinstance(fuzzy, Mapping) else {}
    default_fuzzy = fuzzy_fields.pop("*", None) if isinstance(fuzzy, Mapping) else fuzzy
    return Options(default_tolerance, dict(tolerance or {}), default_fuzzy, dict(scorers or {}), fuzzy_fields)


def scoring_settings(
    tolerance: Mapping[str, float | str | Tolerance] | None,
    default_tolerance: float | str | Tolerance,
    fuzzy: float | Mapping[str, float] | None,
    scorers: Mapping[str, Scorer] | None,
) -> dict[str, Any]:
    """The scoring arguments as the report keeps them (JSON; after `compile_plan` has checked them)."""
    return {
        "tolerance": {path: Tolerance.parse(t).to_json() for path, t in (tolerance or {}).items()},
        "default_tolerance": Tolerance.parse(default_tolerance).to_json(),
        "fuzzy": fuzzy,
        "scorers": sorted(scorers or {}),
    }


def _runs(data: Sequence[_Row], repeat: int) -> list[tuple[_Row, int | None]]:
    """Each row with the number of its run (None when each row runs once)."""
    return [(row, r if repeat > 1 else None) for row in data for r in range(repeat)]


def _score_cells(
    eval_id: str, cells: Sequence[Cell], data: Sequence[_Row], plan: Node, judge_model: Any,
    judged: Sequence[str], resume: bool, budget: Any, map_options: Mapping[str, Any],
    rubric: Mapping[str, str],
) -> None:  # fmt: skip
    """Score each cell's rows from its committed lines and the log; then let the judge decide (its
    calls for every cell at once; a failed one is no verdict, so a resume asks again)."""
    folder = eval_dir(eval_id)
    log = map_options.get("log", True)
    score_rows(folder, cells, data, plan, log=log)
    concurrency = map_options.get("concurrency") or 8
    steps: list[tuple[str, Any, Any]] = []  # (file name, the cell's map job, how its lines apply)
    if judge_model is not None and judged:
        steps.append(("judge", lambda p, c: judge_job(judge_model, p, c, judged, log=log), apply_verdicts))
    if rubric:
        steps.append(
            (
                "rubric",
                lambda p, c: rubric_job(judge_model, p, c, rubric, log=log),
                lambda p, c: apply_rubric(p, c, rubric),
            )
        )
    for name, job, apply in steps:
        paths = [folder / f"{name}-{index}.jsonl" for index in range(len(cells))]
        jobs = [job(path, cell) for path, cell in zip(paths, cells, strict=True)]
        run_maps(jobs, concurrency=concurrency, resume=resume, retry_failed=True, budget=budget)
        for path, cell in zip(paths, cells, strict=True):
            apply(path, cell)


def score_rows(folder: Path, cells: Sequence[Cell], data: Sequence[_Row], plan: Node, *, log: bool) -> None:
    """Score each cell's rows from its committed lines in `folder` and the log's calls (no model call)."""
    log_reader = _LogReader(enabled=log)
    try:
        for index, cell in enumerate(cells):
            lines = read_lines(folder / f"cell-{index}.jsonl")
            runs = _runs(data, cell.repeats)
            cell.rows = [_scored(plan, row, lines.get(run_key(row.key, r)), r) for row, r in runs]
            log_reader.fill(cell.rows)
            if TOOLS in cell.arrays:
                log_reader.trajectories(cell.rows, {row.key: row.tools for row in data})
            if cell.repeats > 1:
                _agreement(plan, cell)
    finally:
        log_reader.close()


def _check_scoring(eval_id: str, scoring: dict[str, Any]) -> None:
    """Refuse to resume an eval whose kept report was scored with other settings: resuming would
    overwrite it (`json` round trip: the kept settings are JSON)."""
    kept = kept_settings(eval_id).get("scoring")
    if kept is not None and kept != json.loads(json.dumps(scoring)):
        changed = ", ".join(sorted(k for k in scoring if kept.get(k) != json.loads(json.dumps(scoring[k]))))
        raise EvalInputError(
            f"eval {eval_id} was scored with other settings ({changed}); resume it with the ones it "
            "was scored with, or run a new eval: its kept report is not overwritten"
        )


def read_rows(
    rows: Iterable[Mapping[str, Any]],
    schema: dict[str, Any],
    expected: str,
    id_field: str | None,
    max_rows: int,
    prompts: Sequence[str] = (),
    expected_tools: str = "expected_tools",
) -> list[_Row]:
    """The rows, each checked: a dict with its expected answer (JSON: finite numbers, at most
    MAX_DEPTH deep), valid under the schema, a unique non-null key, every field the prompts name."""
    from chainform._map._inputs import MapInputError, Row
    from chainform.schema.validate import compile_validator, validate

    validator = compile_validator(schema)  # once: the reasons are worked out only for a refused answer
    out: list[_Row] = []
    seen: dict[str, int] = {}
    for index, row in enumerate(rows):
        if index >= max_rows:
            raise EvalInputError(f"the data has more than {max_rows} rows (--max-rows)")
        if isinstance(row, BaseException):  # what map's file reader yields for a broken line
            raise EvalInputError(f"row {index}: {row}")
        if not isinstance(row, Mapping):
            raise EvalInputError(f"row {index} is not an object with fields (got {type(row).__name__})")
        if id_field is not None and row.get(id_field) in (None, ""):
            what = "no" if id_field not in row else "a null or empty"
            raise EvalInputError(f"row {index} has {what} {id_field!r} field to key it by")
        key = str(index) if id_field is None else str(row[id_field])
        name = f"row {index}" if id_field is None else f"row {key!r}"
        if (first := seen.setdefault(key, index)) != index:
            raise EvalInputError(
                f"rows {first} and {index} have the same {id_field!r} ({key!r}): each row needs its own"
            )
        if expected not in row:
            raise EvalInputError(
                f"{name} has no expected answer (no {expected!r} field; --expected names it)"
            )
        answer = row[expected]
        problem = not_json(answer)
        if problem:
            raise EvalInputError(f"{name}: the expected answer {problem}")
        problems = [] if validator.is_valid(answer) else validate(answer, schema)
        if problems:
            raise EvalInputError(f"{name}: the expected answer does not match the schema: {problems[0]}")
        tools = None
        if row.get(expected_tools) is not None:
            try:
                tools = parse_tools(row[expected_tools])
            except ValueError as exc:
                raise EvalInputError(f"{name}: the expected tools ({expected_tools!r}): {exc}") from None
        inputs = {k: v for k, v in row.items() if k not in (expected, expected_tools)}
        for template in prompts:
            try:
                Row(index, key, inputs).prompt(template)
            except MapInputError as exc:
                raise EvalInputError(f"{name}: {exc}") from None
        out.append(_Row(key, inputs, answer, tools))
    if not out:
        raise EvalInputError("the data has no rows")
    return out


def not_json(value: Any) -> str | None:
    """Why `value` is no JSON value an answer can be compared with: nested more than MAX_DEPTH
    levels, or holding NaN or an infinity; None when it is fine."""
    from chainform._json import MAX_DEPTH

    level = [value]
    for _depth in range(MAX_DEPTH + 1):
        nested: list[Any] = []
        for item in level:
            if isinstance(item, float) and not math.isfinite(item):
                return f"holds {item!r}, which is no JSON number"
            if isinstance(item, dict):
                nested.extend(item.values())
            elif isinstance(item, list):
                nested.extend(item)
        if not nested:
            return None
        level = nested
    return f"is nested more than {MAX_DEPTH} levels deep"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def _name(model: Any) -> str:
    return model if isinstance(model, str) else str(getattr(model, "name", model))


def _judge_model(judge: Any, options: Mapping[str, Any], names: Sequence[str], own: Mapping[str, Any]) -> Any:
    """The judge, made before any call: with its `own` key and base URL where given, else one of the
    same provider as a model evaluated (`openai/...` both) is given the models' key and base URL.
    The models' key goes only to the models' endpoint: a judge with a base URL of its own and no key
    of its own gets none of theirs. One with no key is bad input (exit 2), not a failed row."""
    if judge is None:
        return None
    from chainform.errors import MissingKeyError

    shared = {}
    if isinstance(judge, str) and _provider(judge) in {_provider(name) for name in names}:
        shared = {k: options[k] for k in ("key", "base_url") if options.get(k) is not None}
    given = {k: v for k, v in own.items() if v is not None}
    if given.get("base_url", shared.get("base_url")) != shared.get("base_url"):
        shared.pop("key", None)
    shared |= given
    try:
        return _model(judge, shared)
    except MissingKeyError as exc:
        raise EvalInputError(f"the judge model {_name(judge)!r} cannot run: {exc}") from None


def _provider(name: str) -> str:
    return name.partition("/")[0] if "/" in name else name


def _model(model: Any, options: Mapping[str, Any]) -> Any:
    """A model by name with the SDK's own retries off: the map re-tries a failed call (`retries`),
    so a call that keeps failing is sent `retries + 1` times, not that times the SDK's."""
    if isinstance(model, str):
        from chainform.models import get_model

        try:
            return get_model(model, **{"max_retries": 0, **options})
        except TypeError:  # an in-process model has no SDK retries to turn off
            return get_model(model, **options)
    return model


def _scored(plan: Node, row: _Row, line: dict[str, Any] | None, repeat: int | None = None) -> RowResult:
    result = _result(plan, row, line)
    result.repeat = repeat
    result.expected_tools = row.tools.to_json() if row.tools is not None else None
    return result


def _result(plan: Node, row: _Row, line: dict[str, Any] | None) -> RowResult:
    if line is None:
        fields = _all_wrong(plan, row.expected, "error")
        return RowResult(
            row.key, fields, row.expected, error="not-run: stopped by --max-cost", error_phase="not-run"
        )
    meta = line["_map"]
    result = RowResult(row.key, {}, row.expected, tokens=meta.get("tokens", 0), cost=meta.get("cost"))
    result.conversation_id = meta.get("conversation_id")
    if meta.get("retried"):  # transport retries: sent again, never logged as calls of their own
        result.calls["resent"] = int(meta["retried"])
    if "error" in line:
        error = line["error"]
        result.error = f"{error.get('phase')}: {error.get('type')}: {error.get('message')}"
        result.error_phase = str(error.get("phase"))
        result.fields = _all_wrong(plan, row.expected, "error")
    else:
        result.actual = line.get("value")
        result.fields = score(plan, row.expected, result.actual)
    return result


def _agreement(plan: Node, cell: Cell) -> None:
    """Set each row's first run's `agrees`: per field, whether every run gave the first run's value
    (by the field's rule: the first answer scored as the expected one); a failed run agrees with nothing."""
    for runs in cell.by_row().values():
        first = runs[0]
        paths = [path for path in first.fields if path != TOOLS]  # the answer's fields
        if any(not run.valid for run in runs):
            first.agrees = dict.fromkeys(paths, False)
            continue
        same = dict.fromkeys(paths, True)
        for run in runs[1:]:
            for path, outcome in score(plan, first.actual, run.actual).items():
                same[path] = same.get(path, True) and outcome.status == "right"
        first.agrees = same


def _all_wrong(plan: Node, expected: Any, status: str) -> dict[str, Outcome]:
    """A row with no answer: every field as an answer of nothing would score, none of it right."""
    return {p: o._replace(status=status, right=0) for p, o in score(plan, expected, ABSENT).items()}


class _LogReader:
    """The rows' logged calls: their ids, purposes, summed duration and the strategy that answered,
    read for a whole cell at once (one query per batch of conversations, only the columns needed)."""

    def __init__(self, *, enabled: bool) -> None:
        self.store: Any = None
        if enabled:
            from chainform.store import Store

            try:
                self.store = Store()
            except Exception:  # no readable log: the report says nothing of calls or latency
                self.store = None

    def fill(self, results: Sequence[RowResult]) -> None:
        if self.store is None:
            return
        from chainform.evals._summaries import call_summaries

        logged = call_summaries(
            self.store, [r.conversation_id for r in results if r.conversation_id is not None]
        )
        for result in results:
            calls = logged.get(result.conversation_id or "", [])
            if not calls:
                continue
            result.call_ids = [c.id for c in calls]
            for call in calls:
                result.calls[call.purpose] = result.calls.get(call.purpose, 0) + 1
            durations = [c.duration_ms for c in calls if c.duration_ms is not None]
            result.latency_ms = sum(durations) if durations else None
            answered = [c.strategy for c in calls if c.strategy]
            result.strategy = answered[-1] if answered else None

    def trajectories(self, results: Sequence[RowResult], expected: Mapping[str, Expectation | None]) -> None:
        """Score each row's logged tool calls against its expected ones (a row that never ran: an error)."""
        if self.store is None:
            return
        from chainform.evals._summaries import tool_calls
        from chainform.output import OUTPUT_TOOL_NAME

        made = tool_calls(
            self.store,
            [r.conversation_id for r in results if r.conversation_id is not None],
            skip=OUTPUT_TOOL_NAME,
        )
        for result in results:
            wanted = expected.get(result.key)
            if wanted is None:
                continue
            if result.conversation_id is None:
                result.fields[TOOLS] = Outcome("error", 0, 1, 0, 0, len(wanted.wants))
                continue
            calls = [Call(name, arguments) for name, arguments in made.get(result.conversation_id, [])]
            verdict = judge_tools(wanted, calls)
            result.fields[TOOLS] = verdict.outcome
            result.tools_wrong, result.tools_missed = verdict.wrong, verdict.missed

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


__all__ = [
    "MAX_ROWS",
    "EvalProgress",
    "evaluate",
    "not_json",
    "read_rows",
    "score_rows",
    "scoring_options",
    "scoring_settings",
]
