"""macOS: the cell under ``sandbox-exec`` (Seatbelt) with the intent of the Linux guards.

No network, no writes outside the cell's temporary directory, no reads of the user's home (the
interpreter's own directories excepted), signals only within the sandbox. The profile allows by
default and denies those, because a deny-by-default profile must list every Mach service and
sysctl the interpreter touches, which changes between macOS releases. ``sandbox-exec`` is
deprecated by Apple but still shipped; where it is missing, "auto" falls back to "process" with a
warning and "strict" refuses. Not exercised by the Linux CI.
"""

from __future__ import annotations

import os
import shutil
import sys

_PROFILE = """(version 1)
(allow default)
(deny network*)
(deny file-write*)
(allow file-write* (subpath (param "ROOT")) (literal "/dev/null") (literal "/dev/zero"))
(deny file-read* (subpath (param "HOME")))
{reads}
(allow file-read* (subpath (param "ROOT")))
(deny signal)
(allow signal (target same-sandbox))
"""


def available() -> str | None:
    """The ``sandbox-exec`` binary, where this is macOS and it exists."""
    if sys.platform != "darwin":
        return None
    return shutil.which("sandbox-exec", path="/usr/bin:/bin")


def wrap(command: list[str], root: str) -> list[str]:
    """``command`` run under the profile; ``root`` is the cell's temporary directory."""
    exe = available()
    if exe is None:
        return command
    dirs = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)), *sys.path}
    reads = [os.path.realpath(d) for d in sorted(dirs) if d and os.path.isdir(d)]
    allow = "".join(f'(allow file-read* (subpath "{d}"))\n' for d in reads if '"' not in d and "\\" not in d)
    params = ["-D", f"ROOT={root}", "-D", f"HOME={os.path.realpath(os.path.expanduser('~'))}"]
    return [exe, *params, "-p", _PROFILE.format(reads=allow), *command]
