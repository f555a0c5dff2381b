"""One process at a time runs a chain: an OS lock per logged chain, held while it runs.

A chain killed outright (kill -9) leaves its `chains` row "running"; the lock tells a dead run from
a live one, because the OS releases a dead process's lock. The lock is `flock` on a file named by
the chain's id beside the log (`<log>.locks/<chain id>`), taken without waiting: a second process
(or a second resume in this one) is refused at once. The file is removed when the lock is let go;
a taker checks that the file it locked is still the one at the path, so two takers never both
hold a chain.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no OS lock; one process at a time is not checked
    fcntl = None  # type: ignore[assignment]


class ChainLock:
    """The lock of chain `chain_id` of the log at `log_path`."""

    def __init__(self, log_path: Path, chain_id: str) -> None:
        self.path = Path(f"{log_path}.locks") / chain_id
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock without waiting; False when another holder has it."""
        if fcntl is None:
            return True
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return False
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self._fd = fd
                return True
            os.close(fd)  # the holder before let go and removed it: take the new file

    def held_elsewhere(self) -> bool:
        """True when someone holds the lock now (this object does not take it)."""
        if self._fd is not None:
            return False
        if not self.acquire():
            return True
        self.release()
        return False

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None
