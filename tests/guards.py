"""The unit tier's guard and the suite's leak report (hooked up in tests/conftest.py).

`UnitGuard` refuses, for a test marked `unit`, every socket connect or bind and every new process:
the attempt raises `UnitTierViolation` and is recorded, so the test fails even where the code under
test swallows the error. `socket.socketpair()` stays allowed: asyncio's event loop wakes itself with
one, and it reaches nothing outside the process.

`Leaks` notes what each test left behind (child processes still running, open file descriptors,
threads still alive) and reports, at the end of the run, what is still there once every fixture has
been torn down: a test's leak, not a module fixture's resource.
"""

from __future__ import annotations

import gc
import multiprocessing.process
import os
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

GUARD = "the unit-tier guard (tests/guards.py)"


class UnitTierViolation(RuntimeError):
    """A test marked `unit` opened a socket or started a process."""


@dataclass
class UnitGuard:
    """Socket connect/bind and process starts refused while a unit test runs (setup to teardown)."""

    nodeid: str
    tried: list[str] = field(default_factory=list)
    _elders: set[threading.Thread] = field(default_factory=set)
    _patches: pytest.MonkeyPatch = field(default_factory=pytest.MonkeyPatch)

    def install(self) -> None:
        # Threads alive before the test began are an earlier test's (an exporter retrying, a server's
        # thread winding down): what they do is not this test's doing, and the leak report names them.
        self._elders = set(threading.enumerate()) - {
            threading.current_thread()
        }  # threads, not their reusable ids
        for name in ("connect", "connect_ex", "bind"):
            self._refuse(socket.socket, name, f"socket.{name}")
        self._refuse(subprocess.Popen, "__init__", "subprocess.Popen")
        self._refuse(multiprocessing.process.BaseProcess, "start", "multiprocessing")
        for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve"):
            if hasattr(os, name):
                self._refuse(os, name, f"os.{name}")

    def uninstall(self) -> None:
        self._patches.undo()

    def message(self) -> str:
        return (
            f"{self.nodeid} is marked `unit` but tried {', '.join(dict.fromkeys(self.tried))}, refused by "
            f"{GUARD}. A unit test opens no socket and starts no process: use ScriptedClient, "
            "httpx.MockTransport or click's CliRunner, or drop the `unit` mark (docs/testing.md, 'Test tiers')."
        )

    def _refuse(self, owner: Any, name: str, what: str) -> None:
        original = getattr(owner, name)

        def refuse(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() in self._elders:
                return original(*args, **kwargs)
            self.tried.append(what)
            raise UnitTierViolation(self.message())

        self._patches.setattr(owner, name, refuse)


def _children() -> set[int]:
    """This process's child processes that still run (zombies excluded)."""
    found: set[int] = set()
    for task in Path("/proc/self/task").glob("*/children"):
        try:
            found.update(int(pid) for pid in task.read_text().split())
        except OSError:
            continue
    running = set()
    for pid in found:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            running.add(pid)
    return running


def _fds() -> dict[int, str]:
    """Open file descriptors and what they point at (a path, `socket:[inode]`, `pipe:[inode]`)."""
    found: dict[int, str] = {}
    for entry in Path("/proc/self/fd").iterdir():
        try:
            found[int(entry.name)] = os.readlink(entry)
        except OSError:
            continue
    return found


def _threads() -> dict[int, str]:
    return {t.ident: t.name for t in threading.enumerate() if t.ident is not None and t.is_alive()}


@dataclass
class Leaks:
    """What appeared during each test and was still there after it, checked again at the run's end."""

    enabled: bool = Path("/proc/self/fd").is_dir()
    suspects: list[tuple[str, str, Any]] = field(default_factory=list)  # (nodeid, kind, identity)
    lines: list[str] = field(default_factory=list)  # the report, gathered from every worker
    _before: tuple[set[int], dict[int, str], dict[int, str]] | None = None

    def before(self) -> None:
        if self.enabled:
            self._before = (_children(), _fds(), _threads())

    def after(self, nodeid: str) -> None:
        if not self.enabled or self._before is None:
            return
        children, fds, threads = self._before
        for pid in _children() - children:
            self.suspects.append((nodeid, "process", pid))
        for fd, target in _fds().items():
            if fds.get(fd) != target:
                self.suspects.append((nodeid, "file", (fd, target)))
        for ident, name in _threads().items():
            if ident not in threads:
                self.suspects.append((nodeid, "thread", (ident, name)))

    def report(self) -> list[str]:
        """One line per test whose processes, files or threads outlived every fixture."""
        if not self.suspects:
            return []
        gc.collect()  # an unreferenced file or socket is closed by its collection: not a leak
        children, fds, threads = _children(), _fds(), _threads()
        lines: dict[str, list[str]] = {}
        for nodeid, kind, identity in self.suspects:
            if kind == "process" and identity in children:
                lines.setdefault(nodeid, []).append(f"process {identity}")
            elif kind == "file" and fds.get(identity[0]) == identity[1]:
                lines.setdefault(nodeid, []).append(f"fd {identity[0]} -> {identity[1]}")
            elif kind == "thread" and threads.get(identity[0]) == identity[1]:
                lines.setdefault(nodeid, []).append(f"thread {identity[1]!r}")
        return [f"{nodeid}: {', '.join(found)}" for nodeid, found in lines.items()]
