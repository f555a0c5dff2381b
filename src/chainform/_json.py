"""Model-written JSON, parsed under limits.

Model output is untrusted: a reply nested a thousand levels deep, or many megabytes long, must end
as a validation failure fed back to the model, never as a bare `RecursionError`. pydantic_core's
parser (Rust, depth-limited) does the work. Python's `json` is the fallback only for what
pydantic_core refuses although JSON allows it (a lone surrogate escape such as "\\ud800"), behind
the same limits, and the reader of number literals: a float tells `1.0e-400` from `0` no more than
`1.00000000000000001` from `1`, so where the text has a fraction or an exponent it is read again with
each literal seen (`NonIntegral` marks a whole float whose literal was not whole).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from decimal import Decimal
from typing import Any, Literal

from pydantic_core import from_json

from chainform.errors import JSONLimitError

MAX_DEPTH = 100
"""Deepest nesting accepted from a model; deeper values would overflow recursive validators."""

MAX_CHARS = 16 * 1024 * 1024
"""Longest JSON text parsed from a model (characters)."""


_FRACTION_OR_EXPONENT = re.compile(r"[0-9][.eE]")


class NonIntegral(float):
    """A float that is whole although the JSON literal it was read from is not (`1.0e-400` underflows
    to 0.0, `1.00000000000000001` rounds to 1.0): validation never counts it as an integer, and its
    repr (what a validation error quotes back to the model) is the literal."""

    __slots__ = ("literal",)
    literal: str

    def __new__(cls, literal: str) -> NonIntegral:
        self = super().__new__(cls, literal)
        self.literal = literal
        return self

    def __repr__(self) -> str:
        return self.literal


def exact_float(literal: str) -> float:
    """The float of a JSON number literal, a `NonIntegral` where rounding made a fraction whole."""
    value = float(literal)
    if value.is_integer():
        exact = Decimal(literal)
        if exact != exact.to_integral_value():
            return NonIntegral(literal)
    return value


def _no_constant(name: str) -> Any:
    """NaN, Infinity and -Infinity: Python's json reads them, JSON has no such number."""
    raise ValueError(f"{name} is not JSON (a number must be finite)")


def load_json(text: str) -> Any:
    """The JSON value of `text`. Raises ValueError (`JSONLimitError` for a broken limit)."""
    return _load(text, partial=False)


def load_json_partial(text: str) -> Any:
    """The value a JSON prefix describes so far: open strings, arrays and objects are closed,
    an incomplete key or literal is dropped and text after a complete value is ignored."""
    return _load(text, partial="trailing-strings")


def decode_prefix(text: str, start: int) -> tuple[Any, int]:
    """The JSON value beginning at `start` and the index after it (chatter may follow)."""
    check_size(text)
    try:
        value, end = json.JSONDecoder(parse_float=exact_float, parse_constant=_no_constant).raw_decode(
            text, start
        )
    except RecursionError:
        raise JSONLimitError(f"JSON nested more than {MAX_DEPTH} levels deep") from None
    check_depth(value, text[start:end])
    return value, end


def check_size(text: str) -> None:
    if len(text) > MAX_CHARS:
        raise JSONLimitError(f"JSON text of {len(text)} characters is longer than the {MAX_CHARS} allowed")


def _load(text: str, *, partial: bool | Literal["trailing-strings"]) -> Any:
    check_size(text)
    try:
        value = from_json(text, allow_partial=partial, allow_inf_nan=False)
    except (ValueError, TypeError) as exc:  # TypeError: a raw lone surrogate (not UTF-8 encodable)
        if "recursion limit" in str(exc):
            raise JSONLimitError(f"JSON nested more than {MAX_DEPTH} levels deep") from None
        if partial or not (isinstance(exc, TypeError) or "escape" in str(exc)):
            raise ValueError(str(exc)) from None
        try:  # lone surrogates: valid JSON (or a valid Python str) that pydantic_core rejects
            value = json.loads(text, parse_float=exact_float, parse_constant=_no_constant)
        except RecursionError:
            raise JSONLimitError(f"JSON nested more than {MAX_DEPTH} levels deep") from None
        check_depth(value, text)
        return value
    check_depth(value, text)
    if not partial and _FRACTION_OR_EXPONENT.search(text):
        # The same text, each float read from its own literal (on the odd spelling only pydantic_core
        # reads, its value stands).
        with contextlib.suppress(ValueError):
            value = json.loads(text, parse_float=exact_float, parse_constant=_no_constant)
    return value


def check_depth(value: Any, text: str) -> None:
    """Raise JSONLimitError when `value` nests deeper than MAX_DEPTH (cheap when `text` cannot)."""
    if text.count("[") + text.count("{") > MAX_DEPTH and too_deep(value):
        raise JSONLimitError(f"JSON nested more than {MAX_DEPTH} levels deep")


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` (dicts, lists and tuples within each other) nests deeper than `limit`;
    walked level by level, so a value of any depth is measured without recursion."""
    level: list[Any] = [value] if isinstance(value, dict | list | tuple) else []
    depth = 1
    while level:
        if depth > limit:
            return True
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, dict | list | tuple)
        ]
        depth += 1
    return False


def copy_json(value: Any) -> Any:
    """A deep copy of JSON data (dicts, lists, scalars), at a fraction of `copy.deepcopy`'s cost:
    what caches of schemas hand out, so a caller's change never reaches the cached one."""
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


def canonical_json(value: Any) -> str:
    """The one text form of a schema: keys sorted, no spaces, so key order and formatting never make
    two texts for one schema. Its content address (`content_id`) is the log's schema id, and the
    caches of validators and dialect conversions are keyed by it. NaN and infinities are not JSON
    and raise ValueError."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def content_id(text: str) -> str:
    """The content address of a canonical JSON text (sha256, hex): a schema's id in the log."""
    return hashlib.sha256(text.encode()).hexdigest()
