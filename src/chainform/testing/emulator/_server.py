"""Emulator core: a loopback HTTP server that plays a script through pluggable wire formats.

The core knows HTTP, the script, faults and stream framing; it knows no provider. Providers are
`WireFormat` plugins (`_wire.py` documents the contract), found by `discover_formats`.
Streams are sent with chunked transfer encoding, so a `DropConnection` is seen by clients as a
body that ended early, never as a clean end of stream.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import re
import socket
import threading
import time
from collections.abc import Iterable, Sequence
from http.server import ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from chainform.testing.emulator._anthropic_batches import MessageBatches
from chainform.testing.emulator._batches import BatchService
from chainform.testing.emulator._framing import Framing
from chainform.testing.emulator._gemini_batches import GeminiBatchMode
from chainform.testing.emulator._media import MediaRefused
from chainform.testing.emulator._script import (
    CutStream,
    DropConnection,
    Fault,
    FaultItem,
    MalformedEvent,
    RawResponse,
    ReplyItem,
    ScriptItem,
    Stall,
    Usage,
    estimate_usage,
    to_reply,
)
from chainform.testing.emulator._wire import (
    RecordedRequest,
    StreamEvent,
    WireFormat,
    discover_formats,
)

__all__ = ["Emulator", "RecordedRequest", "StreamEvent", "WireFormat", "discover_formats"]

if TYPE_CHECKING:
    from chainform.testing.emulator._quirks import Quirks


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False
    emulator: Emulator

    def __init__(self, emulator: Emulator) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.emulator = emulator
        self.open_sockets: set[socket.socket] = set()
        self.sockets_lock = threading.Lock()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        # Without TCP_NODELAY a reply's body waits on the client's delayed ACK (~40 ms a request).
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.sockets_lock:
            self.open_sockets.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.sockets_lock:
                self.open_sockets.discard(request)

    def close_open_sockets(self) -> None:
        with self.sockets_lock:
            sockets = list(self.open_sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class Emulator:
    """A scripted provider on 127.0.0.1: `with Emulator([...]) as emu: ... emu.base_url ...`.

    Each request (whatever its route) takes the next script item: a str, `tool_call(...)`,
    `TextReasoningContent`, a list of those, a `Reply`, a `Fault`, `MalformedEvent`,
    `DropConnection`, a `RawResponse` (bytes as given), or a callable `(RecordedRequest) -> item`.
    Every request is recorded in
    `requests` (`record=False` keeps none, for long load runs). `quirks` plays a real server's
    departures from the reference (`_quirks.py`). A request past the end of the
    script gets `default` when given (e.g. a callable answering from the request, for load tests),
    else HTTP 500 with `x-should-retry: false`. `delay` seconds pass before each answer, like a
    provider's think time.
    """

    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        formats: Sequence[WireFormat] | None = None,
        chunk_size: int = 8,
        delay: float = 0.0,
        default: ScriptItem | None = None,
        record: bool = True,
        quirks: Quirks | None = None,
    ) -> None:
        self.script: list[ScriptItem] = list(script)
        self.delay = delay
        self.default = default
        self.record = record
        self.position = 0
        self.chunk_size = chunk_size
        self.quirks = quirks
        self.formats: list[WireFormat] = list(formats) if formats is not None else discover_formats()
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._recorded = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self.stalls = 0  # Stall pauses begun (`wait_for_stalls`)
        self.released = 0  # the pauses ended early, by number (`release_stalls`)
        self._counter = itertools.count(1)
        self._cached: set[str] = set()  # prompt-cache prefixes seen (WireFormat.cache_prefix)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.batches = BatchService(self)  # OpenAI's Files + Batches endpoints (_batches.py)
        self.batches.anthropic = MessageBatches(self.batches)  # and Anthropic's Message Batches
        self.batches.gemini = GeminiBatchMode(self.batches)  # and Gemini's batch mode

    def _cache_read(self, prefixes: list[Any], usage: Usage) -> int:
        """Input tokens read from the emulated prompt cache: the longest prefix seen before counts
        as cached (4 bytes a token, at most the request's input); each is written for next time."""
        read = 0
        for prefix in prefixes:
            text = json.dumps(prefix, sort_keys=True)
            key = hashlib.sha256(text.encode()).hexdigest()
            with self._lock:
                if key in self._cached:
                    read = max(read, len(text) // 4)
                self._cached.add(key)
        return min(read, usage.input_tokens)

    # lifecycle -----------------------------------------------------------------------------
    def start(self) -> Emulator:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(self)
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="chainform-emulator",
            daemon=True,
        )
        thread.start()
        self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        self._stopping.set()  # stalled answers give up
        with self._recorded:
            self._recorded.notify_all()
        server.shutdown()
        server.close_open_sockets()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the emulator is not running; use `with Emulator(...)` or .start()")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """Root URL; OpenAI SDKs want `base_url + "/v1"`, Anthropic and Gemini the root itself."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def remaining(self) -> int:
        return len(self.script) - self.position

    def add(self, *items: ScriptItem) -> None:
        """Append items to the script (for tests that decide replies as they go)."""
        with self._lock:
            self.script.extend(items)

    # request handling ----------------------------------------------------------------------
    def _record(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> RecordedRequest:
        url = urlsplit(target)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        index = next(self._counter)
        request = RecordedRequest(
            method=method,
            path=url.path,
            query=dict(parse_qsl(url.query)),
            headers=headers,
            body=body,
            raw_body=raw,
            index=index,
            request_id=f"req_emu_{index}",
        )
        if self.record:
            with self._recorded:
                self.requests.append(request)
                self._recorded.notify_all()
        return request

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> list[RecordedRequest]:
        """The recorded requests once there are at least `count` (or `timeout` seconds have
        passed). A client that gives up on a request, a timeout, can be done before the server's
        thread has read it: a test that counts requests after one waits here first."""
        with self._recorded:
            self._recorded.wait_for(lambda: len(self.requests) >= count, timeout)
            return list(self.requests)

    def wait_for_stalls(self, count: int, timeout: float = 10.0) -> int:
        """How many `Stall` pauses have begun, once at least `count` have (or `timeout` seconds have
        passed). A pause begins once everything before it is sent: a test whose client keeps its
        timeouts on a clock of the test's own moves that clock on from here, instead of waiting."""
        with self._recorded:
            self._recorded.wait_for(lambda: self.stalls >= count, timeout)
            return self.stalls

    def release_stalls(self, count: int) -> None:
        """End the first `count` `Stall` pauses now, whatever their seconds: a test that moves its
        client's clock on by a pause lets the server go on once the move is made."""
        with self._recorded:
            self.released = max(self.released, count)
            self._recorded.notify_all()

    def _stall(self, seconds: float) -> bool:
        """One pause, counted as it begins: `seconds`, or until released or stopped (then True)."""
        with self._recorded:
            self.stalls += 1
            number = self.stalls
            self._recorded.notify_all()
            self._recorded.wait_for(lambda: self.released >= number or self._stopping.is_set(), seconds)
        return self._stopping.is_set()

    def _route(self, request: RecordedRequest) -> WireFormat | None:
        for fmt in self.formats:
            for pattern in fmt.routes:
                match = re.fullmatch(pattern, request.path)
                if match:
                    request.wire_format = fmt.name
                    request.path_params = {k: v for k, v in match.groupdict().items() if v is not None}
                    return fmt
        return None

    def _next_item(self, request: RecordedRequest) -> ReplyItem | FaultItem:
        with self._lock:
            if self.position >= len(self.script) and self.default is not None:
                item = self.default
            elif self.position >= len(self.script):
                raise _ScriptError(
                    f"chainform emulator: script exhausted - request #{request.index} "
                    f"({request.path}) arrived after all {len(self.script)} item(s) were used"
                )
            else:
                item = self.script[self.position]
                self.position += 1
        if callable(item):
            try:
                return item(request)
            except Exception as exc:
                raise _ScriptError(f"chainform emulator: script callable raised {exc!r}") from exc
        return item


class _ScriptError(Exception):
    pass


class _Handler(Framing):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:  # silence per-request stderr lines
        return

    @property
    def stopping(self) -> threading.Event:
        return self.server.emulator._stopping

    def stall(self, seconds: float) -> bool:
        return self.server.emulator._stall(seconds)

    def do_GET(self) -> None:
        if not self._batch_api("GET", b""):
            self._send_json(404, {"error": {"message": "the chainform emulator only answers POST"}}, {})

    def _batch_api(self, method: str, raw: bytes) -> bool:
        """Answer a Files/Batches request (`_batches.py`); False when it is not one."""
        headers = {k.lower(): v for k, v in self.headers.items()}
        answer = self.server.emulator.batches.answer(method, self.path, headers, raw)
        if answer is not None:
            status, body, kind, *extra = answer
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self._send_bytes(status, data, kind, extra[0] if extra else {})
        return answer is not None

    def do_POST(self) -> None:
        emulator = self.server.emulator
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self._batch_api("POST", raw):
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = emulator._record("POST", self.path, headers, raw)
        fmt = emulator._route(request)
        if fmt is None:
            routes = sorted(r for f in emulator.formats for r in f.routes)
            message = f"chainform emulator: no wire format serves {request.path}; routes: {routes}"
            emulator.errors.append(message)
            self._send_json(404, {"error": {"message": message}}, {"x-should-retry": "false"})
            return
        rid = {fmt.request_id_header: request.request_id}
        try:
            request.media = fmt.media(request)
        except MediaRefused as exc:  # the provider's own refusal uses no script item
            self._send_json(400, fmt.render_error(Fault(400, message=str(exc)), request), rid)
            return
        if emulator.delay > 0:
            time.sleep(emulator.delay)
        refused = emulator.quirks.refuse(request) if emulator.quirks else None
        if refused is not None:  # the server's own refusal uses no script item
            self._send_json(refused.status, fmt.render_error(refused, request), rid)
            return
        if emulator.quirks is not None and emulator.quirks.empty_stream(request):
            self._send_bytes(200, b"", "text/event-stream", rid)
            return
        try:
            item = emulator._next_item(request)
        except _ScriptError as exc:
            emulator.errors.append(str(exc))
            body = fmt.render_error(Fault(500, message=str(exc)), request)
            self._send_json(500, body, {**rid, "x-should-retry": "false"})
            return
        stall = item if isinstance(item, Stall) and item.after_events is not None else None
        if isinstance(item, Stall):
            if stall is None and self._pause(item.seconds):
                self.close_connection = True
                return
            item = item.reply
        if isinstance(item, RawResponse):
            self._send_bytes(item.status, item.body, item.content_type, {**rid, **item.headers})
            return
        if isinstance(item, Fault):
            headers = dict(rid)
            if item.retry_after is not None:
                headers["retry-after"] = _seconds(item.retry_after)
            headers.update(item.headers)
            self._send_json(item.status, fmt.render_error(item, request), headers)
            return
        fault = item if isinstance(item, MalformedEvent | DropConnection | CutStream) else stall
        try:
            reply = to_reply(fault.reply if fault is not None else item)  # type: ignore[arg-type]
        except TypeError as exc:
            emulator.errors.append(f"chainform emulator: bad script item: {exc}")
            body = fmt.render_error(Fault(500, message=emulator.errors[-1]), request)
            self._send_json(500, body, {**rid, "x-should-retry": "false"})
            return
        if emulator.quirks is not None:
            reply = emulator.quirks.bend(reply, request)
        reply.chunk_size = reply.chunk_size or emulator.chunk_size
        if reply.usage is None:
            reply.usage = estimate_usage(reply, raw)
            reply.usage.cached_input_tokens = emulator._cache_read(fmt.cache_prefixes(request), reply.usage)
        if fmt.is_stream(request) or (emulator.quirks and emulator.quirks.streams_always):
            self._answer_stream(
                fmt, [fmt.encode_event(e) for e in fmt.render_stream(reply, request)], fault, rid
            )
        elif isinstance(fault, DropConnection | CutStream) or (  # unstreamed: before any reply
            isinstance(fault, Stall) and self._pause(fault.seconds)
        ):
            self._drop()
        elif isinstance(fault, MalformedEvent):
            self._send_bytes(200, fault.body, fault.content_type, rid)
        else:
            self._send_json(200, fmt.render(reply, request), rid)


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
