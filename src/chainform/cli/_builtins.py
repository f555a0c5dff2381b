"""Tools `-T` offers without any plugin: `current_time` (here) and `python` (the sandbox tool)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any


def current_time(
    timezone: Annotated[
        str | None, "IANA time zone such as 'Europe/Paris'; omit for the machine's local zone"
    ] = None,
) -> dict[str, str]:
    """The current date and time, in UTC and in the requested (or local) time zone."""
    now = dt.datetime.now(dt.timezone.utc)
    if timezone:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            local = now.astimezone(ZoneInfo(timezone))
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {timezone!r}; use an IANA name like 'Europe/Paris'"
            ) from None
    else:
        local = now.astimezone()
    return {
        "utc": now.isoformat(timespec="seconds"),
        "local": local.isoformat(timespec="seconds"),
        "timezone": timezone or (local.tzname() or "local"),
        "weekday": local.strftime("%A"),
    }


def builtin_tools() -> dict[str, Any]:
    """Name -> tool for every built-in; imported lazily so `chainform --help` stays fast."""
    from chainform.tools import Tool, python

    return {"python": python, "current_time": Tool.from_function(current_time)}
