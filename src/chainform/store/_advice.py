"""What went wrong with the log, each cause with the way on that fits it.

Advice that fits one cause loses calls under another: moving `logs.db` aside while `logs.db-wal`
holds committed calls loses them (SQLite checkpoints the WAL into the main file only now and
then), and moving it while another process holds it makes that process's next writes fail. So a
lock names its holder (from /proc/locks, where Linux has it) and says to wait or stop it; a full
disk says so; a bad setting names the setting; a damaged file points to `chainform logs repair`
and `chainform logs backup`, and a move by hand moves all three files.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import Counter
from pathlib import Path

from chainform.errors import StoreError

SIDE_FILES = ("-wal", "-shm")
"""The files SQLite keeps beside a log in WAL mode: `-wal` holds committed calls until a checkpoint."""


def files_of(path: Path) -> list[Path]:
    """The log and its side files (whether they exist or not)."""
    return [path, *(Path(f"{path}{suffix}") for suffix in SIDE_FILES)]


def _move_by_hand(path: Path) -> str:
    return f"moving it by hand, move {path.name}-wal and {path.name}-shm with it (they hold calls too)"


class LogDamagedError(StoreError):
    """The log database has damaged pages; the message says how to keep what it holds."""

    def __init__(self, path: Path, detail: str) -> None:
        self.path = path
        super().__init__(
            f"the log at {path} is damaged ({detail}); `chainform logs repair` saves what SQLite can "
            f"read into a new log and keeps this one beside it (`chainform logs backup FILE` copies it "
            f"as it is; {_move_by_hand(path)})"
        )


class LogLockedError(StoreError):
    """Another process held the log's lock for longer than the lock timeout."""

    def __init__(self, path: Path, waited: float, holders: list[int]) -> None:
        self.path, self.holders = path, holders
        who = (
            f" (process {', '.join(map(str, holders))})"
            if holders
            else f"; `fuser {path}-shm {path}` names it"
        )
        super().__init__(
            f"the log at {path} is locked by another process{who}; waited {waited:g} s "
            "(CHAINFORM_LOG_TIMEOUT sets how long): wait for it to finish, or stop it, then run again "
            "(do not move the log while it runs: its calls would be lost)"
        )


class LogFullError(StoreError):
    """SQLite could not grow the log: the disk (or the file system's quota) is full."""

    reason = "disk full"

    def __init__(self, path: Path, detail: str) -> None:
        self.path = path
        super().__init__(
            f"cannot write to the log at {path}: the disk holding it is full ({detail}); free some "
            "space, then run again (moving the log would not help)"
        )


class LogSettingError(StoreError):
    """A setting of the log (an environment variable) has a value it cannot take."""


def holders(path: Path, *, writers_only: bool = True) -> list[int]:
    """The other processes holding a lock on the log or its side files, from /proc/locks (Linux);
    `writers_only`: only write locks (the writer SQLite makes others wait for). Empty where the
    kernel does not say."""
    wanted: set[str] = set()
    for file in files_of(path):
        try:
            st = file.stat()
        except OSError:
            continue
        wanted.add(f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}")
    try:
        lines = Path("/proc/locks").read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return []
    found: set[int] = set()
    for line in lines:
        fields = line.split()
        if "->" in fields:  # a waiter, not a holder
            continue
        if len(fields) < 6 or fields[5] not in wanted or (writers_only and fields[3] != "WRITE"):
            continue
        if fields[4].isdigit() and int(fields[4]) != os.getpid():
            found.add(int(fields[4]))
    return sorted(found)


def check_intact(db: sqlite3.Connection, path: Path) -> None:
    """Raise LogDamagedError unless the file passes `PRAGMA quick_check`."""
    try:
        problems = [row[0] for row in db.execute("PRAGMA quick_check(3)").fetchall()]
    except sqlite3.DatabaseError as exc:
        raise LogDamagedError(path, str(exc)) from None
    if problems != ["ok"]:
        raise LogDamagedError(path, "; ".join(problems))


def as_store_error(exc: sqlite3.Error, path: Path, doing: str) -> StoreError:
    """A SQLite error met while using the log, as the error of its cause (with the way on)."""
    name = getattr(exc, "sqlite_errorname", "")
    if isinstance(exc, sqlite3.DatabaseError) and ("malformed" in str(exc) or name == "SQLITE_CORRUPT"):
        return LogDamagedError(path, str(exc))
    if name == "SQLITE_FULL":
        return LogFullError(path, str(exc))
    if name == "SQLITE_NOTADB":
        return StoreError(
            f"{doing} ({path}): {exc}; move it aside, with its -wal and -shm files if any (a new log is created)"
        )
    if name.startswith("SQLITE_READONLY"):
        return StoreError(
            f"{doing} ({path}): {exc}; make it and its -wal and -shm files writable for this user"
        )
    return StoreError(f"{doing} ({path}): {exc}")


def reason_of(exc: BaseException) -> str:
    """What a lost call's warning says of why: a short cause where there is one."""
    return str(getattr(exc, "reason", "") or exc)


class Unlogged:
    """The calls a process could not log, by reason, told in one warning (`report`): when the log
    is closed, or at the latest when the process exits."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()  # chains log from the event loop's thread and worker threads

    def add(self, exc: BaseException, calls: int = 1) -> None:
        with self._lock:
            self.counts[reason_of(exc)] += calls

    def report(self) -> None:
        import warnings

        with self._lock:
            counts, self.counts = self.counts, Counter()
        total = sum(counts.values())
        if not total:
            return
        why = "; ".join(reason if len(counts) == 1 else f"{n} {reason}" for reason, n in counts.items())
        warnings.warn(f"chainform: {total} call{'s' if total != 1 else ''} not logged: {why}", stacklevel=2)
