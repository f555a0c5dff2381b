"""Which processes still run: for tests that prove a kill reached every process of a tool cell.

SIGKILL is asynchronous. When `os.killpg` returns, a process of the group may still be listed in
/proc with its command line until the kernel schedules its exit, though it will never run user code
again. So "still running" here means: listed, and neither a zombie, nor exiting, nor with SIGKILL
pending. That is read from the kernel's own state, never waited for with a clock.
"""

from __future__ import annotations

from pathlib import Path

_SIGKILL_BIT = 1 << (9 - 1)  # the pending-signal masks in /proc/PID/status number signals from 1
_PF_EXITING = 0x4  # /proc/PID/stat's flags: set as the process enters do_exit


def _doomed(entry: Path) -> bool:
    """True when the process is a zombie, exiting, or has SIGKILL pending (it can't run code again)."""
    stat = (entry / "stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # the name, in parentheses, may hold spaces
    state, flags = fields[0], int(fields[6])
    if state in "ZXx" or flags & _PF_EXITING:
        return True
    status = dict(line.split(":", 1) for line in (entry / "status").read_text().splitlines() if ":" in line)
    return any(int(status.get(key, "0").strip(), 16) & _SIGKILL_BIT for key in ("SigPnd", "ShdPnd"))


def running(marker: str) -> list[int]:
    """The ids of the processes whose command line holds `marker` and that can still run code.

    The host sees every PID namespace's processes, so a sandboxed cell's children are found too.
    """
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes() and not _doomed(entry):
                pids.append(int(entry.name))
        except (OSError, ValueError):  # the process ended while it was read
            continue
    return pids
