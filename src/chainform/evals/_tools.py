"""Tool trajectories: a row's `expected_tools` against the tool calls its chain logged.

An expectation is one of
- a list, or `{"set": [...]}`: each tool called (at least once), and no other;
- `{"sequence": [...]}`: exactly these calls, in this order;
- `{"counts": {"name": n, ...}}`: each tool called exactly n times, and no other.
An item of a list is a tool's name or `{"name": ..., "arguments": {...}}`: a call matches it when the
names are equal and each argument given is equal in the call (JSON equality; others are free).

It scores like a field (path `TOOLS`): `right` when nothing was missed or wrongly called, with true
positives (expected calls made), false positives (calls wrongly made) and false negatives (expected
calls missed), so the report has the trajectory's accuracy, precision and recall, and names the
tools wrongly called and missed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chainform.evals._score import Outcome

TOOLS = "(tools)"
"""The report's path of the trajectory's figures (no schema field can be named so)."""


@dataclass(frozen=True)
class Want:
    """One expected call: a tool's name and, optionally, arguments the call must have."""

    name: str
    arguments: Mapping[str, Any] | None = None

    def matches(self, call: Call) -> bool:
        if call.name != self.name:
            return False
        if self.arguments is None:
            return True
        given = call.arguments if isinstance(call.arguments, dict) else {}
        return all(k in given and _same(given[k], v) for k, v in self.arguments.items())

    def __str__(self) -> str:
        if not self.arguments:
            return self.name
        return f"{self.name}({json.dumps(self.arguments, sort_keys=True, ensure_ascii=False)})"


@dataclass(frozen=True)
class Call:
    """One logged tool call."""

    name: str
    arguments: Any = None


@dataclass(frozen=True)
class Expectation:
    """What a row expects of its tool calls: `kind` set, sequence or counts."""

    kind: str
    wants: tuple[Want, ...]
    counts: tuple[int, ...] = ()

    def to_json(self) -> Any:
        items = [
            w.name if w.arguments is None else {"name": w.name, "arguments": w.arguments} for w in self.wants
        ]
        if self.kind == "counts":
            return {"counts": {w.name: n for w, n in zip(self.wants, self.counts, strict=True)}}
        return {self.kind: items}


def parse(value: Any) -> Expectation:
    """A row's `expected_tools`; ValueError (saying what is wrong) for anything else."""
    if isinstance(value, str):
        try:
            value = json.loads(value)  # a CSV cell holds JSON text
        except ValueError:
            raise ValueError(f"{value!r} is not JSON (give a list of tool names)") from None
    if isinstance(value, list):
        return Expectation("set", tuple(_want(item) for item in value))
    if isinstance(value, dict) and len(value) == 1:
        kind, items = next(iter(value.items()))
        if kind in ("set", "sequence") and isinstance(items, list):
            return Expectation(kind, tuple(_want(item) for item in items))
        if kind == "counts" and isinstance(items, dict):
            for name, count in items.items():
                if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                    raise ValueError(f"the count of {name!r} is {count!r}, not a whole number >= 0")
            return Expectation("counts", tuple(Want(name) for name in items), tuple(items.values()))
    raise ValueError(
        'give a list of tools, or one of {"set": [...]}, {"sequence": [...]}, {"counts": {"name": n}}'
    )


def _want(item: Any) -> Want:
    if isinstance(item, str) and item:
        return Want(item)
    if isinstance(item, dict) and isinstance(item.get("name"), str) and set(item) <= {"name", "arguments"}:
        arguments = item.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise ValueError(f"the arguments of {item['name']!r} are not an object")
        return Want(item["name"], arguments)
    raise ValueError(f'{item!r} is not a tool: give its name, or {{"name": ..., "arguments": {{...}}}}')


@dataclass
class Verdict:
    """How a row's calls met its expectation: the outcome, and what was wrongly called and missed."""

    outcome: Outcome
    wrong: list[str]
    missed: list[str]


def judge(expected: Expectation, calls: Sequence[Call]) -> Verdict:
    """Score `calls` (in the order they were made) against `expected`."""
    if expected.kind == "sequence":
        matched = _common_subsequence(expected.wants, calls)
        used_wants = {i for i, _ in matched}
        used_calls = {j for _, j in matched}
    elif expected.kind == "counts":
        matched, used_wants, used_calls = [], set(), set()
        for index, (want, count) in enumerate(zip(expected.wants, expected.counts, strict=True)):
            mine = [j for j, call in enumerate(calls) if want.matches(call) and j not in used_calls][:count]
            used_calls.update(mine)
            matched += [(index, j) for j in mine]
            if len(mine) == count:
                used_wants.add(index)
        missed_counts = {
            str(want): count - sum(1 for i, _ in matched if i == index)
            for index, (want, count) in enumerate(zip(expected.wants, expected.counts, strict=True))
        }
        wrong = [calls[j].name for j in range(len(calls)) if j not in used_calls]
        missed = [name for name, left in missed_counts.items() for _ in range(left)]
        return _verdict(len(matched), wrong, missed)
    else:
        used_wants = {i for i, want in enumerate(expected.wants) if any(want.matches(c) for c in calls)}
        used_calls = {j for j, call in enumerate(calls) if any(w.matches(call) for w in expected.wants)}
        matched = [(i, -1) for i in used_wants]
    wrong = [calls[j].name for j in range(len(calls)) if j not in used_calls]
    missed = [str(want) for i, want in enumerate(expected.wants) if i not in used_wants]
    return _verdict(len(matched), wrong, missed)


def _verdict(tp: int, wrong: list[str], missed: list[str]) -> Verdict:
    right = not wrong and not missed
    outcome = Outcome("right" if right else "wrong", int(right), 1, tp, len(wrong), len(missed))
    return Verdict(outcome, wrong, missed)


def _common_subsequence(wants: Sequence[Want], calls: Sequence[Call]) -> list[tuple[int, int]]:
    """The (want, call) pairs of a longest common subsequence: the calls made in the expected order."""
    rows, cols = len(wants), len(calls)
    best = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(cols - 1, -1, -1):
            if wants[i].matches(calls[j]):
                best[i][j] = best[i + 1][j + 1] + 1
            else:
                best[i][j] = max(best[i + 1][j], best[i][j + 1])
    pairs, i, j = [], 0, 0
    while i < rows and j < cols:
        if wants[i].matches(calls[j]) and best[i][j] == best[i + 1][j + 1] + 1:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif best[i + 1][j] >= best[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _same(left: Any, right: Any) -> bool:
    """JSON equality (`true` is not `1`)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right, strict=True))
    return bool(left == right)


__all__ = ["TOOLS", "Call", "Expectation", "Verdict", "Want", "judge", "parse"]
