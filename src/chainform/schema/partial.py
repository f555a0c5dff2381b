"""Partial JSON: the value a structured answer describes while it is still streaming.

`PartialJSON` is fed the answer's text chunk by chunk and parses only at points that keep the total
work linear in the answer's size: every chunk while the text is short, then each time the text has
grown by an eighth. Parsing is pydantic_core's partial mode, under the limits of `load_json`.
"""

from __future__ import annotations

from typing import Any

from chainform._json import load_json_partial

_EAGER_CHARS = 2048
"""Below this length every chunk is parsed (cheap); above, parsing waits for geometric growth."""


def parse_partial(text: str) -> Any | None:
    """The value a JSON prefix describes so far, or None when nothing usable has arrived.

    Text before the first `{` or `[` is skipped and text after a complete value is ignored; open
    strings, arrays and objects are closed; an incomplete key or literal is dropped. Numbers still
    arriving show as far as they go.
    """
    start = _first_json_char(text)
    if start < 0:
        return None
    try:
        return load_json_partial(text[start:])
    except ValueError:
        return None


def _first_json_char(text: str, begin: int = 0) -> int:
    positions = [i for i in (text.find("{", begin), text.find("[", begin)) if i >= 0]
    return min(positions) if positions else -1


class PartialJSON:
    """The growing JSON text of one answer and the partial values worth reporting.

    `feed` returns a new partial value, or None when none is due (nothing new, or not worth
    parsing yet); `finish` parses what arrived in full, so the last value reported is complete.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self._parsed_at = 0
        self._last: Any = None

    def feed(self, chunk: str) -> Any | None:
        if not self._parts:  # skip chatter before the JSON begins
            start = _first_json_char(chunk)
            if start < 0:
                return None
            chunk = chunk[start:]
        self._parts.append(chunk)
        self._length += len(chunk)
        if self._length > _EAGER_CHARS and self._length - self._parsed_at < self._parsed_at // 8:
            return None
        return self._parse()

    def finish(self) -> Any | None:
        if self._parsed_at == self._length:
            return None
        return self._parse()

    def _parse(self) -> Any | None:
        self._parsed_at = self._length
        text = "".join(self._parts)
        self._parts = [text]
        value = parse_partial(text)
        if value is None or value == self._last:
            return None
        self._last = value
        return value
