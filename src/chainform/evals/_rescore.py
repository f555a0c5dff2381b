"""`rescore(ID, ...)`: an eval's kept answers scored again with other scoring settings (tolerances,
fuzzy thresholds, custom scorers) or corrected expected answers, with no model call: a new report,
under a new eval id, beside the old one (which stays as it was).

The answers are the eval's committed map lines (`cell-N.jsonl`), the calls and tool calls come from
the log, and the judge's kept verdicts are reused where the same expected value was judged (a
field the new rules score wrong that was never judged stays wrong: no judge is called)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from chainform.evals._errors import EvalInputError
from chainform.evals._eval_report import EvalReport
from chainform.evals._judge import apply_verdicts
from chainform.evals._keep import eval_dir, load_report, save_report
from chainform.evals._leaves import Tolerance
from chainform.evals._plan import Arr, Scorer, compile_plan, walk
from chainform.evals._report import Cell, RowResult, value_at
from chainform.evals._rubric import apply_rubric, optional_in
from chainform.evals._run import MAX_ROWS, _Row, read_rows, score_rows, scoring_options, scoring_settings
from chainform.evals._tools import TOOLS
from chainform.evals._tools import parse as parse_tools


def rescore(
    eval_id: str,
    rows: Iterable[Any] | None = None,
    *,
    expected: str | None = None,
    expected_tools: str = "expected_tools",
    tolerance: Mapping[str, float | str | Tolerance] | None = None,
    default_tolerance: float | str | Tolerance = 0.0,
    fuzzy: float | Mapping[str, float] | None = None,
    scorers: Mapping[str, Scorer] | None = None,
    max_rows: int = MAX_ROWS,
) -> EvalReport:
    """Score the kept answers of eval `eval_id` (a unique prefix is enough) again: with these scoring
    settings (as `evaluate` takes them), and, when `rows` are given, their expected answers (the
    same rows, keyed as the eval keyed them; `expected` names their field, by default the eval's).
    The new report is kept and returned; it names the old one in `settings["rescored_from"]`."""
    old = load_report(eval_id)
    plan = compile_plan(old.schema, scoring_options(tolerance, default_tolerance, fuzzy, scorers))
    kept = _kept_rows(old)
    rubric_fields = list((old.settings.get("scoring") or {}).get("rubric") or {})
    if rows is None:
        data = [_Row(r.key, {}, r.expected, _tools(r)) for r in kept.values()]
    else:
        field = expected or str(old.settings.get("expected", "expected"))
        id_field = old.settings.get("id_field")
        checked = optional_in(old.schema, rubric_fields) if rubric_fields else old.schema
        data = read_rows(rows, checked, field, id_field, max_rows, (), expected_tools)
        missing = [key for key in kept if key not in {row.key for row in data}]
        extra = [row.key for row in data if row.key not in kept]
        if missing or extra:
            what = f"lacks rows {', '.join(missing[:5])}" if missing else f"has rows {', '.join(extra[:5])}"
            raise EvalInputError(
                f"the data {what} that eval {old.eval_id} did not run: rescore the rows it ran, keyed as "
                f"it keyed them ({'by ' + repr(id_field) if id_field else 'by position'})"
            )
        order = {key: index for index, key in enumerate(kept)}
        data.sort(key=lambda row: order[row.key])
    arrays = [n.path for n in walk(plan) if isinstance(n, Arr)]
    if any(row.tools is not None for row in data):
        arrays.append(TOOLS)
    cells = [
        Cell(c.model, c.strategy, c.prompt, c.run_id, [], arrays, c.prompt_label, c.repeats)
        for c in old.cells
    ]
    folder = eval_dir(old.eval_id)
    score_rows(folder, cells, data, plan, log=True)
    rubric = dict((old.settings.get("scoring") or {}).get("rubric") or {})
    for index, cell in enumerate(cells):
        verdicts = folder / f"judge-{index}.jsonl"
        if verdicts.is_file():
            apply_verdicts(verdicts, cell, _same_expected(kept))
        if rubric:  # a rubric needs no expected value: its kept verdicts hold for the same answers
            apply_rubric(folder / f"rubric-{index}.jsonl", cell, rubric)
    from chainform.store import new_id

    scoring = dict(old.settings.get("scoring") or {})
    scoring |= scoring_settings(tolerance, default_tolerance, fuzzy, scorers)
    settings = {**old.settings, "scoring": scoring, "rescored_from": old.eval_id}
    report = EvalReport(new_id(), old.schema, cells, settings=settings)
    eval_dir(report.eval_id, create=True)
    save_report(report)
    return report


def _kept_rows(report: EvalReport) -> dict[str, RowResult]:
    """The first run of each row the eval scored, in its order."""
    out: dict[str, RowResult] = {}
    for row in report.cells[0].rows if report.cells else []:
        out.setdefault(row.key, row)
    return out


def _tools(row: RowResult) -> Any:
    return parse_tools(row.expected_tools) if row.expected_tools is not None else None


def _same_expected(kept: Mapping[str, RowResult]) -> Any:
    """Whether a kept verdict on (row, field) still holds: the field's expected value is the one judged."""

    def still(row: RowResult, name: str) -> bool:
        before = kept.get(row.key)
        return before is not None and value_at(before.expected, name) == value_at(row.expected, name)

    return still


__all__ = ["rescore"]
