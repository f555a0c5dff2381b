"""One writer per map run: an exclusive `flock` on a lock file, per run id and per OUT.

Two processes resuming one run would write every row twice and could submit a batch twice; a
resume rewriting OUT (dropping its error lines) while another run appends to it loses committed
lines. So a run holds, for as long as it runs, a lock named after its run id, in
`<chainform home>/locks/`, and the CLI one beside its OUT file (`.out.jsonl.lock`): OUT's lock
belongs to the file, so two runs with different homes (CHAINFORM_HOME) are still one file's two
writers. The lock is on a file of its own, not on OUT: a resume replaces OUT (`os.replace`), and a
lock on the old file would guard nothing. The kernel releases a lock when its process ends,
however it ends (kill -9 included): a stale lock file is never an obstacle (a run that ends removes
its file while still holding the lock; one that opened the removed file opens anew). A second
writer gets `MapLockedError` at once (the CLI: one `Error:` line, exit 2), before it has read,
rewritten or sent anything.

Within one process a name is held once and counted (the CLI locks the run, then the library's
run takes the same lock): `flock` locks belong to an open file, so a second open would block.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path

from chainform.errors import ChainformError

_held: dict[str, tuple[int, int]] = {}  # lock file path -> (fd, times held in this process)
_guard = threading.Lock()
_TRIES = 100


class MapLockedError(ChainformError):
    """Another process is writing this map run (or this OUT file) now."""


def _lock_dir() -> Path:
    from chainform._paths import home

    folder = home() / "locks"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def lock_path(kind: str, name: str) -> Path:
    """The lock file of a run id (`kind` "run") or an OUT path ("out"): readable names are kept,
    others hashed."""
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
        name = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return _lock_dir() / f"{kind}-{name}.lock"


def beside(output: Path) -> Path:
    """The lock file of an output file: hidden, in the same folder, whatever the home."""
    return output.parent / f".{output.name}.lock"


@contextlib.contextmanager
def holding(kind: str, name: str, what: str) -> Iterator[None]:
    """Hold the lock of `name` while the block runs; MapLockedError naming `what` (the run or the
    file) and the holder's pid when another process holds it."""
    with holding_file(lock_path(kind, name), what):
        yield


@contextlib.contextmanager
def holding_file(lock: Path, what: str) -> Iterator[None]:
    """Hold the lock file `lock` (made if missing) while the block runs, as `holding`."""
    path = str(lock)
    _acquire(path, what)
    try:
        yield
    finally:
        _release(path)


def _acquire(path: str, what: str) -> None:
    with _guard:
        if path in _held:
            fd, count = _held[path]
            _held[path] = (fd, count + 1)
            return
        opened = None
        for _ in range(_TRIES):  # a file removed under us (its holder ended meanwhile): anew
            if (opened := _locked(path, what)) is not None:
                break
        if opened is None:
            raise MapLockedError(f"{what}: its lock file {path} keeps being replaced; run again")
        os.ftruncate(opened, 0)
        os.write(opened, str(os.getpid()).encode())
        _held[path] = (opened, 1)


def _locked(path: str, what: str) -> int | None:
    """The descriptor of `path`, flocked; None when the file it opened was released and removed
    meanwhile (its lock would guard nothing); MapLockedError when another process holds it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise MapLockedError(
            f"cannot make the lock file of {what}, {path}: {type(exc).__name__}: {exc.strerror}"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode("ascii", "replace").strip()
        os.close(fd)
        by = f" (process {holder})" if holder.isdigit() else ""
        raise MapLockedError(
            f"{what} is being written by another chainform process{by}: wait for it to end, "
            "or stop it, then run again with --resume"
        ) from None
    try:
        same = os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        same = False
    if not same:
        os.close(fd)
        return None
    return fd


def _release(path: str) -> None:
    with _guard:
        fd, count = _held[path]
        if count > 1:
            _held[path] = (fd, count - 1)
            return
        del _held[path]
        with contextlib.suppress(OSError):  # removed while still locked: a waiter opens a new one
            os.unlink(path)
        os.close(fd)  # closing the only descriptor releases the flock


__all__ = ["MapLockedError", "beside", "holding", "holding_file", "lock_path"]
