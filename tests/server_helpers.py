"""A real server started for a test: on 127.0.0.1 at a free port, waited for, always stopped."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(
    argv: list[str], ready_url: str, *, within_s: float, **popen: Any
) -> Iterator[subprocess.Popen[bytes]]:
    """`argv` running until the block ends, once `ready_url` answers (AssertionError if the process
    ends or `within_s` passes first); then terminated, killed if it lingers."""
    server = subprocess.Popen(argv, **popen)
    try:
        deadline = time.monotonic() + within_s
        while True:
            try:
                urllib.request.urlopen(ready_url, timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"{argv[0]} did not start (exit {server.poll()})") from None
                time.sleep(0.1)
        yield server
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
