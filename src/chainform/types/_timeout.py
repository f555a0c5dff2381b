"""`Timeout`: how long a provider call may wait for a connection, and for the server's next byte."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

DEFAULT_CONNECT_S = 10.0
DEFAULT_READ_S = 120.0


@dataclass(frozen=True)
class Timeout:
    """`connect`: seconds to open a connection; `read`: seconds the server may stay silent (the
    time since the last byte or event, never the length of the whole answer, so a long answer that
    keeps streaming is never cut). A call past either ends in `ProviderError` (kind "timeout")."""

    connect: float = DEFAULT_CONNECT_S
    read: float = DEFAULT_READ_S

    def __post_init__(self) -> None:
        for name in ("connect", "read"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"timeout {name} must be a positive number of seconds, got {value!r}")

    @classmethod
    def of(cls, value: TimeoutLike) -> Timeout:
        """A `Timeout` from what a caller may give: None (the defaults), a number (the read timeout;
        the connect timeout is the default, or the number when it is smaller), a `(connect, read)`
        pair, or a `Timeout`."""
        if value is None:
            return cls()
        if isinstance(value, Timeout):
            return value
        if isinstance(value, tuple):
            if len(value) != 2:
                raise ValueError(f"a timeout pair is (connect, read), got {value!r}")
            return cls(*value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return cls(min(DEFAULT_CONNECT_S, value) if value > 0 else value, value)
        raise ValueError(f"a timeout is seconds, (connect, read) or Timeout, got {value!r}")

    @classmethod
    def parse(cls, text: str) -> Timeout:
        """`--timeout`'s text: `READ` or `CONNECT,READ` in seconds; ValueError saying what is wrong."""
        parts = [p.strip() for p in text.split(",")]
        try:
            numbers = [float(p) for p in parts]
        except ValueError:
            raise ValueError(f"a timeout is SECONDS or CONNECT,READ (seconds), got {text!r}") from None
        if len(numbers) == 1:
            return cls.of(numbers[0])
        if len(numbers) == 2:
            return cls(numbers[0], numbers[1])
        raise ValueError(f"a timeout is SECONDS or CONNECT,READ (seconds), got {text!r}")


TimeoutLike = Union[Timeout, float, tuple[float, float], None]
"""What `timeout=` takes: see `Timeout.of`."""
