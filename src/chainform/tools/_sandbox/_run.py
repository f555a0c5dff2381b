"""Running one cell: the temporary directory, the allow-listed environment, the child, its output.

The parent side of the sandbox. The child (``child.py``) confines itself and reports which guards
took hold on a pipe; this side enforces the wall-clock timeout and the output cap, kills the
child's process group, and turns the report into the level in force (`CellOutput.isolation`).
It also plans the cell's total memory: a cgroup v2 of ``memory_mb`` where one is delegated
(`_cgroup`), else the budget divided over a smaller process cap (`memory_plan`).
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from chainform.errors import SandboxUnavailableError
from chainform.tools._sandbox import _cgroup, _seatbelt
from chainform.tools._sandbox._seccomp import unix_socket_filter

Isolation = Literal["auto", "strict", "process"]
ISOLATION_LEVELS: tuple[Isolation, ...] = ("auto", "strict", "process")
MAX_PROCESSES = 64
SHARE_MB = 256  # without a cgroup: the memory of one process, which sets how many may run
_OVERHEAD = 2  # the sandbox's own stage 0 and init count against RLIMIT_NPROC too
_CHILD = str(Path(__file__).with_name("child.py"))


@dataclass(frozen=True)
class Guards:
    """What confined one cell: ``isolation`` is the level in force ("strict", "partial" or "process")."""

    isolation: str
    active: tuple[str, ...] = ()
    missing: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)  # how a guard holds, where that matters

    def describe(self) -> str:
        """One line for people: the level, then what is missing and why, then how guards hold."""
        text = self.isolation
        if self.missing:
            text += " (missing: " + "; ".join(f"{k}: {v}" for k, v in self.missing.items()) + ")"
        if self.notes:
            text += " (" + "; ".join(f"{k}: {v}" for k, v in self.notes.items()) + ")"
        return text


class CellOutput(str):
    """What a cell printed (a plain ``str`` to every consumer) plus the guards it ran under."""

    guards: Guards

    @property
    def metadata(self) -> dict[str, object]:
        return {
            "isolation": self.guards.isolation,
            "guards": list(self.guards.active),
            "missing": dict(self.guards.missing),
            "notes": dict(self.guards.notes),
        }


@dataclass(frozen=True)
class MemoryPlan:
    """How a cell's memory is bounded: ``address_space`` per process, at most ``processes`` of the
    cell's (the sandbox's own two come on top), all of them together by ``cgroup`` when one was
    made; else ``split_note`` says the budget was divided."""

    address_space: int
    processes: int
    cgroup: str = ""
    split_note: str = ""
    no_cgroup: str = ""


def memory_plan(memory_mb: float, isolation: Isolation) -> MemoryPlan:
    """A cgroup v2 of ``memory_mb`` where one is delegated; otherwise ``memory_mb`` divided over a
    process cap of one per `SHARE_MB` (at least one), so the processes together stay within it."""
    memory = int(memory_mb * 2**20)
    if isolation == "process" or sys.platform != "linux":
        return MemoryPlan(memory, 0)
    base, why = _cgroup.memory_base()
    if base:
        try:
            return MemoryPlan(memory, MAX_PROCESSES - _OVERHEAD, _cgroup.make_cell(base, memory))
        except OSError as exc:
            why = f"could not make a cgroup under {base} ({exc.strerror})"
    processes = max(1, min(MAX_PROCESSES - _OVERHEAD, int(memory_mb // SHARE_MB)))
    share = memory // processes
    note = (
        f"{memory_mb:g} MB divided over at most {processes} processes or threads of "
        f"{share / 2**20:g} MB each, as {why}"
    )
    return MemoryPlan(share, processes, split_note=note, no_cgroup=why)


def _environment(work: str) -> dict[str, str]:
    """Built from an allow-list: nothing of the caller's environment (keys, tokens) reaches the cell."""
    env = {"PATH": os.defpath, "HOME": work, "TMPDIR": work, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    tz = os.environ.get("TZ", "")
    if tz and len(tz) < 64 and all(c.isalnum() or c in "/_+-:." for c in tz):
        env["TZ"] = tz
    return env


def _read_report(fd: int) -> bytes:
    """What the child reported; never blocks (a killed child may not have written everything)."""
    os.set_blocking(fd, False)
    chunks = []
    try:
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    except BlockingIOError:
        pass
    finally:
        os.close(fd)
    return b"".join(chunks)


def _parse_report(
    data: bytes, isolation: Isolation, seatbelt: bool, plan: MemoryPlan, no_seccomp: str
) -> tuple[Guards, int | None]:
    active: list[str] = ["seatbelt"] if seatbelt else []
    missing: dict[str, str] = {}
    notes: dict[str, str] = {}
    status = None
    for line in data.decode("utf-8", "replace").splitlines():
        key, _, value = line.partition("=")
        if key == "got":
            active += [g for g in value.split(",") if g]
        elif key == "missing":
            name, _, why = value.partition(":")
            missing[name] = why
        elif key == "status" and value.lstrip("-").isdigit():
            status = int(value)
    if not data:
        missing["sandbox"] = "the child ended before it reported its guards"
    if isolation != "process" and sys.platform == "linux" and data:
        if no_seccomp:
            missing["seccomp-unix"] = no_seccomp
        if plan.split_note and "process-limit" in active:
            active.append("memory-split")
            notes["memory-split"] = plan.split_note
        elif plan.split_note:
            missing["memory-total"] = f"{plan.no_cgroup}, and no process limit to divide the budget over"
    if isolation != "process" and sys.platform != "linux" and not seatbelt:
        missing["sandbox"] = (
            f"no OS sandbox for {sys.platform} (Linux namespaces/Landlock, macOS sandbox-exec)"
        )
    if isolation == "process" or active in ([], ["rlimits"]):
        level = "process"
    else:
        level = "partial" if missing else "strict"
    return Guards(level, tuple(active), missing, notes), status


def _exit_note(sig: int) -> str:
    """Why the cell ended, when a signal ended it."""
    if sig <= 0:
        return ""
    name = signal.Signals(sig).name
    why = {"SIGXCPU": " (CPU time limit)", "SIGKILL": " (killed, likely the memory limit)"}.get(name, "")
    return f"[the process was ended by {name}{why}]"


def _gone(pid: int, wait_s: float) -> bool:
    """Wait up to `wait_s` until the child has exited, without reaping it, so its group id stays
    ours; whether it did. A pidfd wakes us the moment it exits; elsewhere, poll."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.pidfd_open(pid)
        try:
            return bool(select.select([fd], [], [], wait_s)[0])
        finally:
            os.close(fd)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.002)


def run_cell(
    code: str,
    *,
    timeout: float,
    memory_mb: float,
    max_output: int,
    max_file_mb: int,
    disk_mb: int,
    site_packages: bool,
    isolation: Isolation,
) -> CellOutput:
    """Run ``code`` (already checked) under ``isolation``; return its output with the guards used.

    Raises `SandboxUnavailableError` when ``isolation="strict"`` and a guard is not available here.
    """
    command = [sys.executable, "-I", "-u"] if site_packages else [sys.executable, "-I", "-S", "-u"]
    seatbelt = isolation != "process" and _seatbelt.available() is not None
    with tempfile.TemporaryDirectory(prefix="chainform-py-", ignore_cleanup_errors=True) as root:
        root = os.path.realpath(root)  # Landlock rules name real paths
        work = os.path.join(root, "work")
        os.mkdir(work)
        cell = os.path.join(root, "cell.py")
        with open(cell, "w", encoding="utf-8") as f:
            f.write(code)
        if seatbelt:
            command = _seatbelt.wrap(command, root)
        plan = memory_plan(memory_mb, isolation)
        nproc = plan.processes + _OVERHEAD if plan.processes else 0
        limits = [math.ceil(timeout) + 1, int(memory_mb * 2**20), max_file_mb * 2**20, nproc]
        program, no_seccomp = unix_socket_filter() if isolation != "process" else (b"", "")
        share = plan.address_space if plan.split_note else 0  # applied only with the process cap
        extra = [str(disk_mb * 2**20), program.hex() or "-", plan.cgroup or "-", str(share)]
        report_r, report_w = os.pipe()
        try:
            proc = subprocess.Popen(
                [*command, _CHILD, cell, isolation, *map(str, limits), str(report_w), *extra],
                cwd=work,
                env=_environment(work),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=(report_w,),
            )
        except BaseException:
            if plan.cgroup:
                _cgroup.remove_cell(plan.cgroup)
            raise
        finally:
            os.close(report_w)
        try:
            text, note = _collect(proc, timeout, max_output)
            data = _read_report(report_r)
        finally:
            if plan.cgroup:
                oom = _cgroup.oom_killed(plan.cgroup)
                _cgroup.remove_cell(plan.cgroup)
    guards, cell_status = _parse_report(data, isolation, seatbelt, plan, no_seccomp)
    if isolation == "strict" and guards.isolation != "strict" and (data or not note):
        raise SandboxUnavailableError(
            "isolation='strict' refused to run the code: this machine lacks "
            + "; ".join(f"{k} ({v})" for k, v in guards.missing.items())
            + ". Use isolation='auto' to run with the guards available, or run chainform in a container."
        )
    if (isolation == "auto" and guards.isolation != "strict") or (isolation != "process" and guards.notes):
        _warn_once(guards)
    if not note:
        if cell_status is not None:  # a wait status, reported by the sandbox's init
            note = _exit_note(os.WTERMSIG(cell_status) if os.WIFSIGNALED(cell_status) else 0)
        else:  # the child itself ran the cell: Popen's return code is minus the signal
            note = _exit_note(-proc.returncode)
    if plan.cgroup and oom and "memory" not in note:
        note = (
            f"{note}{chr(10) if note else ''}[a process of the cell was killed by its memory limit (cgroup)]"
        )
    if note:
        text = f"{text}{'' if not text or text.endswith(chr(10)) else chr(10)}{note}"
    out = CellOutput(text)
    out.guards = guards
    return out


_warned: set[str] = set()


def _warn_once(guards: Guards) -> None:
    """Say once per process that "auto" got less than every guard, and what is missing."""
    text = guards.describe()
    if text not in _warned:
        _warned.add(text)
        warnings.warn(f"chainform: the python tool runs with isolation {text}", RuntimeWarning, stacklevel=4)


def _collect(proc: subprocess.Popen[bytes], timeout: float, max_output: int) -> tuple[str, str]:
    """Read the child's output until it ends, the timeout, or the cap; then kill its group."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    chunks: list[bytes] = []
    size = 0
    note = ""
    deadline = time.monotonic() + timeout
    timed_out = f"TimeoutError: the code ran longer than {timeout:g} s and was stopped"
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                note = timed_out
                break
            if not sel.select(remaining):
                continue
            data = os.read(fd, 65536)
            if (
                not data
            ):  # the output is closed; the cell may still run (it closed its own): the timeout holds
                if not _gone(proc.pid, max(deadline - time.monotonic(), 0)):
                    note = timed_out
                break
            chunks.append(data)
            size += len(data)
            if size > max_output:
                note = f"[output truncated at {max_output} bytes; the code was stopped]"
                break
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.stdout.close()
    proc.wait()
    return b"".join(chunks)[:max_output].decode("utf-8", errors="replace"), note
