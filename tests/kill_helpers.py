"""kill -9 at an exact point: a child writes a line to a FIFO once it reached it (inside a tool,
say), or a request it sent is held at the emulator; the test then kills it, with no clock."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path


def wait_readable(path: Path) -> str:
    """The first line written to FIFO `path` (a safety bound of 120 s, never a measured wait)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        chunks = b""
        while not chunks.endswith(b"\n"):
            ready, _, _ = select.select([fd], [], [], 120)
            assert ready, "the child never reached the point it signals"
            chunks += os.read(fd, 100)
        return chunks.decode()
    finally:
        os.close(fd)


@contextlib.contextmanager
def killed_after(proc: subprocess.Popen[str], released: threading.Event) -> Iterator[None]:
    """Kill `proc` with SIGKILL once the block (the wait for its kill point) ends, and reap it;
    `released` (the held requests' answer) is set whatever happens."""
    try:
        yield
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        released.set()
        if proc.poll() is None:
            proc.kill()
