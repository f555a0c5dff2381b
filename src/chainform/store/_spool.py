"""The log's spool: a chain that writes in place appends its rows to a file beside the log.

A sync chain running alone commits its calls before it returns (store/_chainlog.py), so that
write is part of every such chain's time. As a journal row in SQLite (store/_journal.py) it is
one statement, but a transaction: a read mark, a write lock, the WAL frames and their index,
eight system calls or more, about a tenth of a 2-call chain on a fast server (bench_chain.py
--ab). Appended to `<log>-spool` it is ONE `write` (under a shared `flock`, so a reader never
takes half of it): the bytes are in the kernel's page cache when the chain returns, which is
what SQLite's WAL at `synchronous = NORMAL` gives a commit too; both survive the process being
killed (`kill -9`), neither a power cut.

Each record is a line, `FORMAT JSON` (a chain's `_rows.Rows` in the journal's format, or its
compact record, store/_compact.py), a newline before and after it, so a record cut
short when its process died (a write the chain never returned from) spoils only itself. Readers
drain the spool before anything reads the tables (`Store._spread`): inside a write transaction
of the log and under an exclusive `flock` of the spool, every whole record is written to the
tables (each in its own savepoint, as a journal row), and the file is emptied only after that
transaction committed; a record already in the log (the reader died between the two) is
skipped. The lock order is always the log's, then the spool's, so readers never deadlock.
Where `fcntl` is missing (Windows) chains use the SQLite journal instead.
"""

from __future__ import annotations

import os
import re
import sqlite3
import warnings
from collections.abc import Callable
from pathlib import Path

from chainform.store._journal import put

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

AVAILABLE = fcntl is not None


class Spool:
    """Appends chains' rows to `<log>-spool` and drains them into the log."""

    def __init__(self, log: Path) -> None:
        self.path = Path(f"{log}-spool")
        self._fd: int | None = None
        self._pid = 0

    def _append_fd(self) -> int:
        if self._fd is None or self._pid != os.getpid():  # a descriptor does not cross fork()
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            self._pid = os.getpid()
        return self._fd

    def append(self, fmt: int, record: bytes) -> None:
        """Add a chain's record: its rows as JSON (`FORMAT`, without attachments), or its compact
        record (`_compact.FORMAT`)."""
        data = memoryview(b"\n%d %s\n" % (fmt, record))
        fd = self._append_fd()
        fcntl.flock(fd, fcntl.LOCK_SH)
        try:
            while data:  # a regular file takes it whole; a short write goes on where it stopped
                data = data[os.write(fd, data) :]
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def pending(self) -> bool:
        try:
            return os.stat(self.path).st_size > 0
        except OSError:
            return False

    def drain(self, write: Callable[[Callable[[sqlite3.Connection], int]], int]) -> int:
        """Write every whole record into the log through `write` (the store's write transaction),
        then empty the spool; how many records were written."""
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            return 0
        try:
            done = write(lambda db: _spread(db, fd))
            os.ftruncate(fd, 0)  # only once the records are committed, still under the lock
            return done
        finally:
            os.close(fd)  # drops the lock

    def close(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = None


def _spread(db: sqlite3.Connection, fd: int) -> int:
    """Write the spool's whole records (inside the log's write transaction: its lock is taken
    first, then the spool's, the one order every reader keeps)."""
    fcntl.flock(fd, fcntl.LOCK_EX)  # appends wait from here until the spool is emptied
    os.lseek(fd, 0, os.SEEK_SET)
    with open(fd, "rb", closefd=False) as lines:  # the caller closes the descriptor
        return sum(_put(db, line.rstrip(b"\n")) for line in lines)


def _put(db: sqlite3.Connection, line: bytes) -> bool:
    fmt, _, text = line.partition(b" ")
    if not fmt:
        return False
    if not fmt.isdigit() or not text.endswith((b"}", b"]")):  # cut short by its process's death
        warnings.warn("chainform: dropped a chain cut short in the log's spool", stacklevel=5)
        return False
    rid = _FIRST_ID.search(text)
    if rid and db.execute("SELECT 1 FROM responses WHERE id = ?", ((rid[1] or rid[2]).decode(),)).fetchone():
        return False  # written by a reader that died before it emptied the spool
    return put(db, int(fmt), text)


_FIRST_ID = re.compile(rb'^\["([0-9a-z]{26})"|"responses":\[\["([0-9a-z]{26})"')
