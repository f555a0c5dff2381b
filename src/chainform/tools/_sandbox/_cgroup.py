"""A cgroup v2 per cell, where one is delegated to chainform: the memory of all its processes summed.

Rlimits bound each process alone (four processes of 800 MB each pass a 1,024 MB ``RLIMIT_AS``).
A cgroup's ``memory.max`` bounds the sum, files in the cell's tmpfs included. chainform can make
one only inside a cgroup it may write whose ``memory`` controller is delegated, e.g. under
``systemd-run --user --scope -p Delegate=yes chainform ...`` or a container's own cgroup
namespace. A cgroup that holds processes cannot hand controllers to children ("no internal
processes"), so when chainform is alone in its cgroup it moves itself into a ``chainform`` leaf
first, as systemd asks of delegated subtrees. Where none of this is possible, `memory_base`
says why, and the sandbox divides the budget over its process cap instead (`_run`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import time

_MOUNTINFO, _OWN = "/proc/self/mountinfo", "/proc/self/cgroup"


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _own_cgroup() -> str:
    """chainform's cgroup v2 folder, or ``""`` when there is no cgroup v2 hierarchy."""
    mount = ""
    for line in _read(_MOUNTINFO).splitlines():
        fields = line.split(" - ")
        if len(fields) == 2 and fields[1].split(" ", 1)[0] == "cgroup2":
            mount = fields[0].split(" ")[4]
            break
    path = next((line[3:] for line in _read(_OWN).splitlines() if line.startswith("0::")), "")
    return os.path.join(mount, path.strip("/")).rstrip("/") if mount and path else ""


@functools.cache
def memory_base() -> tuple[str, str]:
    """The folder under which a cell's cgroup can be made, or ``""`` and why not (once per process)."""
    try:
        own = _own_cgroup()
        if not own:
            return "", "no cgroup v2 hierarchy is mounted"
        if "memory" not in _read(os.path.join(own, "cgroup.controllers")).split():
            return "", f"the memory controller is not delegated to chainform's cgroup v2 ({own})"
        if "memory" in _read(os.path.join(own, "cgroup.subtree_control")).split():
            return own, ""
        others = set(_read(os.path.join(own, "cgroup.procs")).split()) - {str(os.getpid())}
        if others:
            return "", (
                f"chainform's cgroup ({own}) holds other processes; run chainform in its own "
                "delegated cgroup (systemd-run --user --scope -p Delegate=yes ...)"
            )
        leaf = os.path.join(own, "chainform")
        os.makedirs(leaf, exist_ok=True)
        _write(os.path.join(leaf, "cgroup.procs"), str(os.getpid()))
        _write(os.path.join(own, "cgroup.subtree_control"), "+memory")
        return own, ""
    except OSError as exc:
        return "", f"chainform's cgroup v2 is not writable ({exc.strerror or exc})"


def make_cell(base: str, memory: int) -> str:
    """A new cgroup for one cell: ``memory`` bytes in all, no swap. Raises ``OSError``."""
    path = os.path.join(base, f"chainform-cell-{secrets.token_hex(6)}")
    os.mkdir(path)
    try:
        _write(os.path.join(path, "memory.max"), str(memory))
        with contextlib.suppress(FileNotFoundError):  # no swap accounting on this kernel
            _write(os.path.join(path, "memory.swap.max"), "0")
    except OSError:
        remove_cell(path)
        raise
    return path


def oom_killed(path: str) -> bool:
    """Whether the memory limit killed a process of the cell."""
    try:
        events = dict(line.split() for line in _read(os.path.join(path, "memory.events")).splitlines())
    except (OSError, ValueError):
        return False
    return events.get("oom_kill", "0") != "0"


def remove_cell(path: str) -> None:
    """Remove a cell's cgroup once its processes are gone (they die with the PID namespace)."""
    for _ in range(50):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)
