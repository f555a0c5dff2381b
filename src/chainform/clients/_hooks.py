"""What chainform hooks into an SDK client it builds: the splicer of its inline attachments
(`_splice.py`) and the idle clocks of its calls (`_timeouts.py`), made with the client and handed
to the adapter that sends through it, so each request's hooks find that request's own state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from chainform.clients._splice import Splicer
from chainform.clients._timeouts import Clocks

_ATTRIBUTE = "_chainform_hooks"  # on an SDK client chainform built: its SdkHooks


@dataclass(eq=False)
class SdkHooks:
    """The state an SDK client's hooks read: one splicer and one table of clocks."""

    splicer: Splicer = field(default_factory=Splicer)
    clocks: Clocks = field(default_factory=Clocks)
    rebuild: Callable[[], Any] | None = None
    """A fresh client like this one (set by the registry's `connect`): its adapter owns this one,
    closes it in `aclose` and builds the next with this when it is used again."""
    closers: list[Callable[[], Awaitable[Any]]] = field(default_factory=list)
    """What closing the SDK client leaves open (an HTTP client it was handed), closed after it."""


def attach(sdk: Any, hooks: SdkHooks) -> Any:
    """`sdk` (built by chainform with `hooks` installed) carrying them, for the adapter it is
    handed to; returns it."""
    setattr(sdk, _ATTRIBUTE, hooks)
    return sdk


def hooks_of(sdk: Any) -> SdkHooks | None:
    """The hooks of an SDK client chainform built; None for one of the caller's (no splicing, and
    its calls' silences are measured between events only)."""
    found = getattr(sdk, _ATTRIBUTE, None)
    return found if isinstance(found, SdkHooks) else None


__all__ = ["SdkHooks", "attach", "hooks_of"]
