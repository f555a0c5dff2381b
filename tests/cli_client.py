"""`chainform` on a docs block's PATH: runs one command in the warm CLI server (tests/cli_server.py).

Run as `python -I -S` (no site, no environment read): it imports nothing but a few builtin modules,
sends its argv, directory, environment and descriptors 0 to 2, forwards the signals it gets to the
command's process, and exits as the command did.
"""

from __future__ import annotations

import marshal
import os
import signal
import socket
import struct
import sys

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def _read(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        more = connection.recv(size - len(data))
        if not more:
            break
        data += more
    return data


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def main(address: str) -> None:
    present = [fd for fd in (0, 1, 2) if _is_open(fd)]
    payload = marshal.dumps((sys.argv, os.getcwdb(), dict(os.environb), present))
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(address)
        socket.send_fds(connection, [struct.pack("!I", len(payload)) + payload], present)
    except OSError as exc:
        os.write(2, f"chainform (docs test client): no CLI server at {address}: {exc}\n".encode())
        os._exit(1)
    pid = _read(connection, 4)
    if len(pid) == 4:
        command = struct.unpack("!i", pid)[0]
        for number in FORWARDED:
            signal.signal(number, lambda received, _frame: os.kill(command, received))
    status = _read(connection, 4)
    if len(status) < 4:
        log = os.path.join(os.path.dirname(address), "server.log")
        os.write(2, f"chainform (docs test client): the CLI server went away (its log: {log})\n".encode())
        os._exit(1)
    code = struct.unpack("!i", status)[0]
    if code < 0:  # killed by a signal: end the same way, so the shell's $? is the same
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)
