"""A warm `chainform` for the tests that run the docs' shell lines as written (docs/testing.md).

Every `chainform` line of a bash block used to be a new Python process, paying the CLI's and the
SDKs' imports each time (most of a short command's CPU). `cli_server(folder)` starts one server
process that has imported them once and puts a `chainform` on a folder for the block's PATH: a
small client (tests/cli_client.py, run as `python -I -S`) that hands the server its argv, working
directory, environment and its stdin, stdout and stderr themselves (file descriptors passed over a
unix socket), forwards the signals it gets, and exits as the command did (a command killed by a
signal kills the client with the same signal, so bash's `$?` is the same).

For each command the server forks a waiter, which forks the command's process and reports its exit
status to the client. The command's process takes the client's descriptors as 0, 1 and 2, its
directory, environment and argv, then calls the `chainform` console script's entry point (read from
the package's metadata) as the script does, `sys.exit(main())`, and ends as any Python process
ends: atexit handlers, threads joined, output flushed. So every command starts from the same state,
freshly forked, and nothing one command does reaches the next. The server forks only while it is
the only thread of its process (checked: a fork beside a running thread can copy a held lock); the
imports it makes start none.

Differences from a process of its own, none of which a docs example relies on: only descriptors
0 to 2 are passed (a `3>file` redirection does not reach the command), the hash seed is the
server's, the command's parent process is the waiter, not the shell, and once its atexit handlers
ran and its output is flushed the process ends with `os._exit` (`Ending.leave`): the interpreter's
teardown, which would copy the server's whole heap into the forked process, is skipped.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import importlib.metadata
import io
import marshal
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CLIENT = Path(__file__).resolve().with_name("cli_client.py")
WARM = (
    "chainform.cli",
    "chainform.chain",
    "chainform.clients.openai_chat",
    "chainform.clients.openai_responses",
    "chainform.clients.anthropic",
    "chainform.clients.gemini",
    "chainform.store",
    "chainform.tools",
    "chainform.schema",
    "chainform.documents",
    "chainform.map",
    "chainform.pricing",
    "chainform.models",
    "chainform.keys",
    "chainform.mcp._session",
    "chainform.mcp._serve",
    "chainform.otel",
    "mcp.client.stdio",
    "mcp.server",
    "opentelemetry.sdk.trace",
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "openai",
    "anthropic",
    "google.genai",
    "genai_prices",
    "httpx",
    "anyio",
    "truststore",
    "sqlite3",
    "rich.console",
)
"""Modules the server imports before its first fork: what most docs commands load (one missing is skipped)."""


@contextlib.contextmanager
def cli_server(folder: Path) -> Iterator[Path]:
    """A warm CLI server while the block runs; yields the folder holding its `chainform` client.

    The server runs in a session of its own and is ended with every process it forked, however the
    `with` block ends, and on its own if this process dies first (its stdin, a pipe from here, ends).
    """
    folder.mkdir(parents=True, exist_ok=True)
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    address = folder / "cli.sock"
    client = bin_dir / "chainform"
    client.write_text(
        f"#!{sys.executable} -IS\n"
        f"import sys\nsys.path.insert(0, {str(CLIENT.parent)!r})\n"
        f"import cli_client\ncli_client.main({str(address)!r})\n",
        encoding="utf-8",
    )
    client.chmod(0o755)
    import chainform  # the chainform under test, which the server must import too

    under_test = str(Path(chainform.__file__).resolve().parents[1])
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [under_test, os.environ.get("PYTHONPATH")]))
    )
    log = folder / "server.log"
    with log.open("wb") as errors:
        server = subprocess.Popen(
            [sys.executable, __file__, str(address), str(bin_dir)],
            env=env,
            stdin=subprocess.PIPE,  # its lifeline: at EOF (this process gone, however) it ends
            stdout=subprocess.PIPE,
            stderr=errors,
            start_new_session=True,
        )
    try:
        assert server.stdout is not None
        if server.stdout.readline() != b"ready\n":  # written once it listens; EOF if it failed
            server.wait()
            raise RuntimeError(f"the CLI server did not start:\n{log.read_text(errors='replace')}")
        server.stdout.close()
        yield bin_dir
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)  # the server, its waiters and the commands still running
        server.wait()
        for pipe in (server.stdin, server.stdout):
            if pipe is not None:
                pipe.close()


def _only_thread() -> bool:
    """Whether this process runs one thread (the kernel's count where it has one: C threads too)."""
    tasks = Path("/proc/self/task")
    return len(list(tasks.iterdir())) == 1 if tasks.is_dir() else threading.active_count() == 1


def _receive(connection: socket.socket) -> tuple[Any, list[int]]:
    """One request: (argv, cwd, environ) and the client's descriptors, in the order 0, 1, 2 it listed."""
    data, fds, _flags, _address = socket.recv_fds(connection, 1 << 16, 3)
    if len(data) < 4:
        raise EOFError("a client left before its request")
    size = struct.unpack("!I", data[:4])[0]
    data = data[4:]
    while len(data) < size:
        more = connection.recv(size - len(data))
        if not more:
            raise EOFError("a client left mid-request")
        data += more
    return marshal.loads(data), fds


def serve(address: str) -> tuple[Any, list[int]]:
    """Accept commands for ever; returns only in a command's own process, with its request."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(64)
    if not _only_thread():
        raise RuntimeError(
            "the CLI server has a thread beside its own after its imports: it cannot fork safely"
        )
    sys.stdout.buffer.write(b"ready\n")
    sys.stdout.flush()
    while True:
        ready, _, _ = select.select([listener, sys.stdin], [], [])
        if sys.stdin in ready:  # EOF: the tests that started it are gone without stopping it
            os.killpg(os.getpgrp(), signal.SIGKILL)
        connection, _ = listener.accept()
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:  # waiters that are done
                pass
        try:
            request, fds = _receive(connection)
        except (EOFError, OSError):
            connection.close()
            continue
        if not _only_thread():
            raise RuntimeError("the CLI server has a thread beside its own: it cannot fork safely")
        if os.fork() == 0:  # the waiter: forks the command and reports how it ended
            listener.close()
            command = os.fork()
            if command == 0:
                connection.close()
                return request, fds
            for fd in fds:
                os.close(fd)
            with contextlib.suppress(OSError):
                connection.sendall(struct.pack("!i", command))
            status, usage = os.wait4(command, 0)[1:]
            cpu = usage.ru_utime + usage.ru_stime
            print(
                f"command {command}: exit {os.waitstatus_to_exitcode(status)}, {cpu:.3f} s CPU",
                file=sys.stderr,
            )
            with contextlib.suppress(OSError):
                connection.sendall(struct.pack("!i", os.waitstatus_to_exitcode(status)))
            os._exit(0)
        for fd in fds:
            os.close(fd)
        connection.close()


def become(request: Any, fds: list[int], bin_dir: str) -> None:
    """This process takes the client's descriptors, directory, environment and argv."""
    argv, cwd, environ, present = request
    received = dict(zip(present, fds, strict=True))
    for fd in (0, 1, 2):
        if fd in received:
            os.dup2(received[fd], fd)
            os.close(received[fd])
        else:
            os.close(fd)
    os.chdir(cwd)
    os.environb.clear()
    os.environb.update(environ)
    sys.argv = list(argv)
    sys.path[0] = bin_dir  # the console script's own folder, as for the installed `chainform`
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        stream = None
        if fd in received:  # as Python opens its own: stderr line-buffered, stdout when a terminal
            binary = open(fd, "rb" if fd == 0 else "wb", closefd=False)  # noqa: SIM115 (open until exit)
            line_buffering = fd == 2 or (fd == 1 and os.isatty(fd))
            stream = io.TextIOWrapper(binary, old.encoding, old.errors, line_buffering=line_buffering)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


@dataclass
class Ending:
    """How the command's `sys.exit(main())` ended: its exception (SystemExit when it returned)."""

    raised: BaseException | None = None

    def leave(self) -> None:
        """The command's last atexit handler: ends the process as Python would, without its teardown.

        Registered before anything else, it runs after every other atexit handler (the command's
        own), flushes stdout and stderr and calls `os._exit` with Python's exit status: 120 when a
        flush fails, 1 for an uncaught exception, the signal for KeyboardInterrupt. The teardown it
        skips (collecting every module and object) writes to every page of a forked process's heap,
        which copies the server's whole memory: most of a short command's CPU. Coverage.py's own
        handler was registered before this one, so its data is saved here.
        """
        raised = self.raised
        if isinstance(raised, SystemExit):
            code = raised.code
            status = 0 if code is None else code if isinstance(code, int) else 1
        else:
            status = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except Exception:  # as Python's own exit: "Exception ignored ...", then status 120
                status = 120
        if "coverage" in sys.modules and (measuring := sys.modules["coverage"].Coverage.current()):
            measuring.stop()
            measuring.save()
        if isinstance(raised, KeyboardInterrupt):
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        os._exit(status & 0xFF)


if __name__ == "__main__":
    ending = Ending()
    atexit.register(ending.leave)  # first registered, so the command's last handler
    socket_path, client_dir = sys.argv[1:3]
    for module in WARM:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    (entry_point,) = importlib.metadata.entry_points(group="console_scripts", name="chainform")
    main = entry_point.load()
    got, descriptors = serve(socket_path)
    become(got, descriptors, client_dir)
    try:
        sys.exit(main())  # as the `chainform` console script
    except BaseException as exc:
        ending.raised = exc
        raise
