"""The report as one self-contained HTML page: no script, no network, every value escaped (answers
are model output). An SVG plot of rows right against cost per row (one point per cell), per-field
accuracy bars, a confusion table per enum field and every wrong row with its logged call ids."""

from __future__ import annotations

from collections import Counter
from html import escape
from typing import Any

from chainform.evals._eval_report import EvalReport
from chainform.evals._plan import Leaf, compile_plan, walk
from chainform.evals._report import Cell, value_at, value_text, wrong_fields
from chainform.evals._table import cell_texts, columns, field_text, money, percent, tool_lines

MAX_WRONG_ROWS = 200
"""Wrong rows listed per cell at most (the rest are counted)."""
MAX_CONFUSION_VALUES = 20
"""Values a confusion table shows at most as rows and as columns: the most frequent ones; the others
are folded into one last row and column that says how many values it holds."""

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}.bad{color:#b00}code{font-size:90%}
"""


def html(report: EvalReport) -> str:
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>chainform eval {escape(report.eval_id)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>chainform eval <code>{escape(report.eval_id)}</code></h1>",
        "<h2>Rows right against cost per row</h2>",
        plot(report.cells),
        "<h2>Cells</h2>",
        _cells_table(report.cells),
        "<h2>Field accuracy</h2>",
        *(_field_bars(cell) for cell in report.cells),
        *_confusions(report),
        *_tool_mistakes(report.cells),
        "<h2>Wrong rows</h2>",
        *(_wrong_rows(cell) for cell in report.cells),
        "</body></html>",
    ]
    return "\n".join(parts)


def plot(cells: list[Cell], width: int = 720, height: int = 320) -> str:
    """An SVG scatter: x cost per row (USD; unpriced cells at 0), y the share of rows right."""
    pad, labels = 50, 180  # room for the axes' text; on the right, for the cells' names
    costs = [float(c.cost_per_row or 0) for c in cells]
    top = max(costs) or 1.0
    points = []
    for index, (cell, cost) in enumerate(zip(cells, costs, strict=False)):
        x = pad + (width - 2 * pad - labels) * cost / top
        y = height - pad - (height - 2 * pad) * cell.right_rate
        colour = _COLOURS[index % len(_COLOURS)]
        points.append(
            f"<circle class='cell' cx='{x:.1f}' cy='{y:.1f}' r='6' fill='{colour}'>"
            f"<title>{escape(cell.name)}: {percent(cell.right_rate)} right, {money(cell.cost_per_row)}/row</title></circle>"
            f"<text x='{x + 9:.1f}' y='{y + 4:.1f}' font-size='11'>{escape(cell.name)}</text>"
        )
    axes = (
        f"<line x1='{pad}' y1='{height - pad}' x2='{width - pad - labels}' y2='{height - pad}' stroke='#333'/>"
        f"<line x1='{pad}' y1='{pad}' x2='{pad}' y2='{height - pad}' stroke='#333'/>"
        f"<text x='{(width - labels) / 2}' y='{height - 12}' text-anchor='middle' font-size='12'>cost per row (max ${top:.4g})</text>"
        f"<text x='14' y='{height / 2}' font-size='12' transform='rotate(-90 14 {height / 2})' text-anchor='middle'>rows right</text>"
        f"<text x='{pad - 6}' y='{pad + 4}' text-anchor='end' font-size='11'>100%</text>"
        f"<text x='{pad - 6}' y='{height - pad + 4}' text-anchor='end' font-size='11'>0%</text>"
    )
    return (
        f"<svg id='plot' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"role='img' aria-label='rows right against cost per row'>{axes}{''.join(points)}</svg>"
    )


_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def _cells_table(cells: list[Cell]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in (*columns(cells), "run id"))
    repeats = max((cell.repeats for cell in cells), default=1)
    rows = [
        "<tr>" + "".join(f"<td>{escape(v)}</td>" for v in (*cell_texts(cell, repeats), cell.run_id)) + "</tr>"
        for cell in cells
    ]
    return f"<table id='cells'><tr>{head}</tr>{''.join(rows)}</table>"


def _field_bars(cell: Cell) -> str:
    figures = cell.fields()
    agreement = cell.agreement() if cell.repeats > 1 else {}
    bar_width, line = 300, 20
    bars = []
    for index, (path, f) in enumerate(figures.items()):
        y = index * line
        bars.append(
            f"<text x='0' y='{y + 14}' font-size='12'>{escape(path)}</text>"
            f"<rect x='180' y='{y + 3}' width='{bar_width * f.accuracy:.1f}' height='14' fill='#1f77b4'/>"
            f"<text x='{185 + bar_width}' y='{y + 14}' font-size='12'>{escape(field_text(f, agreement.get(path)))}</text>"
        )
    height = max(len(figures), 1) * line
    return (
        f"<h3>{escape(cell.name)}</h3><svg class='bars' xmlns='http://www.w3.org/2000/svg' "
        f"width='720' height='{height}'>{''.join(bars)}</svg>"
    )


def _confusions(report: EvalReport) -> list[str]:
    """Expected value (rows) against answered value (columns), per enum field not inside an array."""
    enums = [
        n
        for n in walk(compile_plan(report.schema))
        if isinstance(n, Leaf) and n.kind == "enum" and "[]" not in n.path
    ]
    out: list[str] = []
    for node in enums:
        out.append(f"<h2>Confusion: <code>{escape(node.path)}</code></h2>")
        for cell in report.cells:
            counts: dict[tuple[str, str], int] = {}
            for row in cell.rows:
                answered = "(error)" if row.error else _text(value_at(row.actual, node.path))
                pair = (_text(value_at(row.expected, node.path)), answered)
                counts[pair] = counts.get(pair, 0) + 1
            seen = {p[0] for p in counts} | {p[1] for p in counts}
            declared = [_text(v) for v in node.enum or []]
            labels = declared + sorted(seen - set(declared))  # the schema's order, then null and (error)
            labels, counts = _folded(labels, counts)
            head = "".join(f"<th>{escape(label)}</th>" for label in labels)
            body = "".join(
                f"<tr><th>{escape(e)}</th>"
                + "".join(f"<td>{counts.get((e, a), '')}</td>" for a in labels)
                + "</tr>"
                for e in labels
            )
            out.append(
                f"<h3>{escape(cell.name)}</h3><table class='confusion'>"
                f"<tr><th>expected \\ answered</th>{head}</tr>{body}</table>"
            )
    return out


def _folded(
    labels: list[str], counts: dict[tuple[str, str], int]
) -> tuple[list[str], dict[tuple[str, str], int]]:
    """`labels` cut to the `MAX_CONFUSION_VALUES` met most often (expected or answered; a tie goes to
    the earlier), in their order, then one label for the rest, which sums their counts: a table of
    at most that many plus one rows and columns however many values the rows hold."""
    if len(labels) <= MAX_CONFUSION_VALUES:
        return labels, counts
    met: Counter[str] = Counter()
    for (expected, answered), n in counts.items():
        met[expected] += n
        met[answered] += n
    order = {label: index for index, label in enumerate(labels)}
    kept = set(sorted(labels, key=lambda label: (-met[label], order[label]))[:MAX_CONFUSION_VALUES])
    other = f"(other {len(labels) - len(kept):,} values)"
    folded: Counter[tuple[str, str]] = Counter()
    for (expected, answered), n in counts.items():
        folded[(expected if expected in kept else other, answered if answered in kept else other)] += n
    return [label for label in labels if label in kept] + [other], dict(folded)


def _tool_mistakes(cells: list[Cell]) -> list[str]:
    """Per cell with expected tool calls: the tools wrongly called and the calls missed, counted."""
    lines = [(cell, tool_lines(cell)) for cell in cells]
    if not any(found for _, found in lines):
        return []
    out = ["<h2>Tool calls</h2>"]
    for cell, found in lines:
        if found:
            items = "".join(f"<li>{escape(line)}</li>" for line in found)
            out.append(f"<h3>{escape(cell.name)}</h3><ul class='tools'>{items}</ul>")
    return out


def _text(value: Any) -> str:
    return "null" if value is None else str(value)


def _wrong_rows(cell: Cell) -> str:
    wrong = [row for row in cell.rows if not row.right]
    items = []
    for row in wrong[:MAX_WRONG_ROWS]:
        fields = "".join(
            f"<div><code>{escape(path)}</code> {escape(status)}: expected <code>{escape(value_text(expected))}</code>, "
            f"answered <code>{escape(value_text(answered))}</code></div>"
            for path, status, expected, answered in ([] if row.error else wrong_fields(row))
        )
        calls = " ".join(f"<code>{escape(c)}</code>" for c in row.call_ids) or "(no logged call)"
        if row.conversation_id:
            calls = f"<code>{escape(row.conversation_id)}</code>: {calls}"
        error = f" <span class='bad'>{escape(row.error)}</span>" if row.error else ""
        items.append(f"<tr><td>{escape(row.label)}</td><td>{fields}{error}</td><td>{calls}</td></tr>")
    more = f"<p>and {len(wrong) - MAX_WRONG_ROWS} more</p>" if len(wrong) > MAX_WRONG_ROWS else ""
    return (
        f"<h3>{escape(cell.name)}: {len(wrong)} wrong</h3><table class='wrong'><tr><th>row</th>"
        f"<th>fields not right: expected against answered</th><th>conversation: logged call ids (<code>chainform logs --cid CONVERSATION</code>)</th></tr>{''.join(items)}</table>{more}"
    )


__all__ = ["MAX_WRONG_ROWS", "html", "plot"]
