"""How the emulator's handler frames what it sends: chunked streams with their faults, whole bodies.

Kept apart from `_server.py` (the request's route through the script) so that each stays small;
it knows HTTP framing and the stream faults (`_script`), no provider and no emulator state.
"""

from __future__ import annotations

import array
import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from chainform.testing.emulator._script import CutStream, DropConnection, MalformedEvent, Stall
from chainform.testing.emulator._wire import WireFormat

if sys.platform != "win32":
    import fcntl
    import termios


class Framing(BaseHTTPRequestHandler):
    """The sending half of the emulator's request handler."""

    @property
    def stopping(self) -> threading.Event:
        """Set when the emulator stops: a stalled answer gives up."""
        raise NotImplementedError

    def stall(self, seconds: float) -> bool:
        """A `Stall`'s pause, counted by the emulator: `seconds`, or until a test releases it;
        True when the emulator stopped during it."""
        raise NotImplementedError

    def _pause(self, seconds: float) -> bool:
        """A `Stall`'s pause, begun once what was written before it is in the client's socket."""
        _delivered(self.connection, self.stopping)
        return self.stall(seconds)

    def _answer_stream(
        self,
        fmt: WireFormat,
        events: list[bytes],
        fault: MalformedEvent | DropConnection | CutStream | Stall | None,
        rid: dict[str, str],
    ) -> None:
        if isinstance(fault, DropConnection) and fault.after_events <= 0:
            self._drop()
            return
        if isinstance(fault, MalformedEvent):
            events.insert(max(0, fault.after_events), fmt.malformed_event())
        self.send_response(200)
        self.send_header("content-type", fmt.stream_content_type)
        self.send_header("transfer-encoding", "chunked")
        self.send_header("cache-control", "no-cache")
        for key, value in rid.items():
            self.send_header(key, value)
        self.end_headers()
        try:
            for n, data in enumerate(events):
                if isinstance(fault, DropConnection) and n >= fault.after_events:
                    self._drop()
                    return
                if isinstance(fault, CutStream) and n >= fault.after_events:
                    if fault.mid_event and len(data) > 1:
                        half = data[: len(data) // 2]
                        self.wfile.write(f"{len(half):X}\r\n".encode() + half + b"\r\n")
                    break
                if isinstance(fault, Stall) and self._pauses(fault, n):
                    return
                self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:  # the client went away; nothing to tell it
            self.close_connection = True

    def _pauses(self, stall: Stall, n: int) -> bool:
        """Wait out `stall` before event `n` when it is due there; True when the emulator stopped."""
        after = stall.after_events or 0
        if not (n == after or (stall.every and n > after)):
            return False
        self.wfile.flush()
        stopped = self._pause(stall.seconds)
        if stopped:
            self._drop()
        return stopped

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send_json(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        self._send_bytes(status, json.dumps(body).encode(), "application/json", headers)

    def _send_bytes(self, status: int, data: bytes, content_type: str, headers: dict[str, str]) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:  # the client gave up (e.g. timed out on a Stall); nothing to tell it
            self.close_connection = True


def _delivered(connection: socket.socket, stopping: threading.Event) -> None:
    """Until the peer's TCP has taken every byte written (the send queue's unacknowledged bytes,
    Linux's TIOCOUTQ on a socket; on loopback, then in the client's socket). Elsewhere, or on a
    socket without the query, at once."""
    if sys.platform == "win32":
        return
    query = getattr(termios, "TIOCOUTQ", None)
    if query is None:
        return
    pending = array.array("i", [0])
    while not stopping.is_set():
        try:
            fcntl.ioctl(connection.fileno(), query, pending)
        except OSError:
            return
        if pending[0] == 0:
            return
        stopping.wait(0.001)
