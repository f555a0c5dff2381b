"""Score one answer against its expected answer, field by field, from a compiled plan (`_plan`).

`score(plan, expected, actual)` returns `{path: Outcome}`. A field's status is one of
`right`, `wrong` (both present, values differ), `missing` (the answer lacks it), `null` (the answer
has null where a value, or nothing, was expected), `unexpected` (a value where null or nothing
was expected); `error` is what the eval gives every field of a row whose chain failed.

Arrays carry true/false positives and false negatives of their items; the fields of an array's
items (`items[].price`) carry `right` of `total` (one per expected item, plus one per answered
item that matched none). Items of an unordered array are aligned by the assignment that makes the
most fields right: a greedy pass (each expected item in turn takes the best answered item not yet
taken) when it provably cannot be beaten, else scipy's `linear_sum_assignment` (without scipy, the
greedy pass: it can miss the best alignment when items look alike).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from chainform.evals._plan import Arr, Leaf, Node, Obj


class Outcome(NamedTuple):
    status: str
    right: int = 0
    total: int = 1
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def __add__(self, other: object) -> Outcome:  # type: ignore[override]
        if not isinstance(other, Outcome):
            return NotImplemented
        return Outcome(
            self.status if self.status != "right" else other.status,
            self.right + other.right,
            self.total + other.total,
            self.tp + other.tp,
            self.fp + other.fp,
            self.fn + other.fn,
        )


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()
"""A field the object does not have (as opposed to one that is null)."""

RIGHT = Outcome("right", 1)
_NOTHING = Outcome("right", 0, 0)  # an item field of an array with no item on either side
_STATUS = {name: Outcome(name) for name in ("wrong", "missing", "null", "unexpected", "error")}
_STATUS["right"] = RIGHT


def presence(expected: Any, actual: Any) -> str | None:
    """The status decided by presence and null alone; None when both hold a value to compare."""
    if expected is ABSENT:
        return "right" if actual is ABSENT else ("null" if actual is None else "unexpected")
    if expected is None:
        return "right" if actual is None else ("missing" if actual is ABSENT else "unexpected")
    if actual is ABSENT:
        return "missing"
    if actual is None:
        return "null"
    return None


def score(plan: Node, expected: Any, actual: Any) -> dict[str, Outcome]:
    """Every field's Outcome for one row (`actual` ABSENT: no answer at all)."""
    out: dict[str, Outcome] = {}
    _score(plan, expected, actual, out)
    return out


def _score(node: Node, expected: Any, actual: Any, out: dict[str, Outcome]) -> None:
    if type(node) is Leaf:
        out[node.path] = _leaf(node, expected, actual)
    elif type(node) is Obj:
        _object(node, expected, actual, out)
    else:
        assert isinstance(node, Arr)
        _array(node, expected, actual, out)


def _leaf(node: Leaf, expected: Any, actual: Any) -> Outcome:
    if type(expected) is type(actual) and type(expected) not in (dict, list) and expected == actual:
        return RIGHT
    status = presence(expected, actual)
    if status is not None:
        return _STATUS[status]
    return RIGHT if node.compare(expected, actual) else _STATUS["wrong"]


def _object(node: Obj, expected: Any, actual: Any, out: dict[str, Outcome]) -> None:
    status = presence(expected, actual)
    if status is None and not (isinstance(expected, dict) and isinstance(actual, dict)):
        status = "wrong"
    if (
        status is not None
    ):  # the fields score as absent (or null), with their counts, under the object's status
        inner: dict[str, Outcome] = {}
        for name, child in node.fields.items():
            _score(child, _child(expected, name), None if actual is None else ABSENT, inner)
        for path, outcome in inner.items():
            out[path] = outcome if status == "right" else outcome._replace(status=status, right=0, tp=0)
        return
    get_e, get_a = expected.get, actual.get
    for name, child in node.fields.items():
        _score(child, get_e(name, ABSENT), get_a(name, ABSENT), out)


def _child(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        return value.get(name, ABSENT)
    return None if value is None else ABSENT


def _array(node: Arr, expected: Any, actual: Any, out: dict[str, Outcome]) -> None:
    status = presence(expected, actual)
    if status is None and not (isinstance(expected, list) and isinstance(actual, list)):
        status = "wrong"
    if status is not None:
        wanted = len(expected) if isinstance(expected, list) else 0
        given = len(actual) if isinstance(actual, list) else 0
        if status == "right":  # both absent or both null: nothing to count in the items' fields
            out[node.path] = RIGHT
            for path in node.paths:
                out[path] = _NOTHING
            return
        out[node.path] = Outcome(status, 0, 1, 0, given, wanted)
        for path in node.paths:
            out[path] = Outcome(status, 0, max(wanted, 1))
        return
    if type(node.item) is Leaf:
        tp = _scalar_matches(node.item, node.ordered, expected, actual)
    else:
        tp = _object_items(node, expected, actual, out)
    fp, fn = len(actual) - tp, len(expected) - tp
    out[node.path] = Outcome("right" if fp == fn == 0 else "wrong", int(fp == fn == 0), 1, tp, fp, fn)


def _scalar_matches(item: Leaf, ordered: bool, expected: list[Any], actual: list[Any]) -> int:
    """How many items of an array of scalars are matched by a right one."""
    if ordered:
        return sum(_leaf(item, e, a) is RIGHT for e, a in zip(expected, actual, strict=False))
    grid = [[1.0 if _leaf(item, e, a) is RIGHT else 0.0 for a in actual] for e in expected]
    return sum(int(grid[i][j]) for i, j in assign(grid)) if expected and actual else 0


def _object_items(node: Arr, expected: list[Any], actual: list[Any], out: dict[str, Outcome]) -> int:
    """Score the fields of aligned item pairs into `out`; return the pairs right in every field."""
    pairs = _ordered(node, expected, actual) if node.ordered else _aligned(node, expected, actual)
    items: dict[str, Outcome] = {}
    tp = 0
    for sub in pairs:
        tp += all(o.status == "right" for o in sub.values())
        for path, outcome in sub.items():
            items[path] = items[path] + outcome if path in items else outcome
    extra = [  # the items no pair holds: expected ones missing, answered ones unexpected
        Outcome(status, 0, count)
        for status, count in (
            ("missing", len(expected) - len(pairs)),
            ("unexpected", len(actual) - len(pairs)),
        )
        if count
    ]
    for path in node.paths:
        got = items.get(path)
        for outcome in extra:
            got = got + outcome if got else outcome
        out[path] = got or _NOTHING
    return tp


def _ordered(node: Arr, expected: list[Any], actual: list[Any]) -> list[dict[str, Outcome]]:
    return [score(node.item, e, a) for e, a in zip(expected, actual, strict=False)]


def _aligned(node: Arr, expected: list[Any], actual: list[Any]) -> list[dict[str, Outcome]]:
    """The item pairs of the best one-to-one alignment, each pair's outcomes."""
    if not expected or not actual:
        return []
    grid = [[score(node.item, e, a) for a in actual] for e in expected]
    worth = [
        [sum(o.right for o in cell.values()) / max(sum(o.total for o in cell.values()), 1) for cell in row]
        for row in grid
    ]
    return [grid[i][j] for i, j in assign(worth)]


def assign(worth: list[list[float]]) -> list[tuple[int, int]]:
    """Pairs (row, column), each used once, of greatest total worth.

    A greedy pass first (each row in turn takes its best free column); when its total reaches the
    bound nothing can pass (the smaller of the sums of the rows' and the columns' best worths), it
    is the answer. Otherwise scipy's `linear_sum_assignment`, or the greedy pairs without scipy."""
    pairs = _greedy(worth)
    if not pairs:
        return pairs
    bound = min(sum(max(row) for row in worth), sum(max(column) for column in zip(*worth, strict=False)))
    if sum(worth[i][j] for i, j in pairs) >= bound:
        return pairs
    try:
        from scipy.optimize import linear_sum_assignment
    except ImportError:
        return pairs
    rows, cols = linear_sum_assignment(worth, maximize=True)
    return [(int(i), int(j)) for i, j in zip(rows, cols, strict=False)]


def _greedy(worth: list[list[float]]) -> list[tuple[int, int]]:
    taken: set[int] = set()
    pairs: list[tuple[int, int]] = []
    for i, row in enumerate(worth):
        free = [j for j in range(len(row)) if j not in taken]
        if not free:
            break
        best = max(free, key=lambda j: row[j])  # the first of equal worth
        taken.add(best)
        pairs.append((i, best))
    return pairs


__all__ = ["ABSENT", "Outcome", "assign", "presence", "score"]
