"""OpenAI's Files and Batches endpoints in the emulator: upload JSONL, create, retrieve, cancel, list
(Anthropic's Message Batches, `_anthropic_batches.py`, and Gemini's batch mode, `_gemini_batches.py`,
on the same settings).

A batch moves one state per retrieve (validating -> in_progress -> finalizing -> completed), so a
client has to poll a few times, as with the real service. Its lines are answered when it
finalizes, each through the same script and wire format as a live call (one script item a line,
in the file's order): a reply is an output line, a `Fault` an errored line, `Expired()` an expired
one. Faults of the batch itself are settings of `emu.batches` (`BatchService`): `fail_next`
batches fail validation, `hold` keeps batches in progress (across a client's restart), `polls`
sets how many retrieves a batch stays in progress, `instant` ends a batch at its first retrieve
(for tests that do not follow a batch's states: a client's first poll finds it done), `rewrite` edits the output lines before they
are written (unknown or duplicate custom_ids), `raw_output` edits the output file's bytes (a line
cut short), `http_faults` answers the next requests of a kind ("create" a batch, "retrieve" one)
with an HTTP error status instead, for every provider, and `max_requests` / `max_bytes` are the
limits past which a batch fails validation, as OpenAI's does.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from chainform.testing.emulator._script import Fault, RecordedRequest, estimate_usage, to_reply

_STATES = ("validating", "in_progress", "finalizing", "completed")
Answer = tuple[int, Any, str] | tuple[int, Any, str, dict[str, str]]
"""HTTP status, body (dict, or bytes), content type[, response headers]."""


@dataclass
class Expired:
    """A batch line the provider did not get to in the completion window (`batch_expired`)."""


@dataclass
class _Batch:
    body: dict[str, Any]
    lines: list[dict[str, Any]]
    polls_left: int
    results: bytes = b""  # Anthropic's results file (JSONL), once the batch ended


@dataclass
class BatchService:
    """The emulated Files and Batches API of one emulator, with its faults (see the module doc)."""

    emulator: Any  # the Emulator (_server.py) whose script answers the lines
    polls: int = 1
    hold: bool = False
    instant: bool = False
    fail_next: int = 0
    max_requests: int = 50_000
    max_bytes: int = 200 * 1024 * 1024
    rewrite: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None
    raw_output: Callable[[bytes], bytes] | None = None
    http_faults: list[tuple[str, int]] = field(default_factory=list)  # (kind, status), in order
    files: dict[str, bytes] = field(default_factory=dict)
    batches: dict[str, _Batch] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)  # batch ids in creation order
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    anthropic: Any = None  # Anthropic's Message Batches (_anthropic_batches.py), set by the server
    gemini: Any = None  # Gemini's batch mode (_gemini_batches.py), set by the server

    def answer(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Answer | None:
        """The reply to a Files/Batches request, or None when `path` is not one of theirs."""
        path = path.split("?")[0]
        with self._lock:
            fault = self._fault(method, path)
            if fault is not None:
                return fault
            for api in (self.gemini, self.anthropic):
                found: Answer | None = api.answer(method, path, headers, raw) if api is not None else None
                if found is not None:
                    return found
            path = re.sub(r"^(?:/openai)?(?:/v1)?", "", path)
            if method == "POST" and path == "/files":
                return self._upload(headers, raw)
            if method == "GET" and (m := re.fullmatch(r"/files/([^/]+)/content", path)):
                content = self.files.get(m.group(1))
                return (200, content, "application/octet-stream") if content is not None else _missing("file")
            if method == "POST" and path == "/batches":
                return self._create(json.loads(raw or b"{}"))
            if method == "GET" and path == "/batches":
                data = [self.batches[i].body for i in reversed(self.created) if i.startswith("batch_")]
                return 200, {"object": "list", "data": data, "has_more": False}, "application/json"
            if m := re.fullmatch(r"/batches/([^/]+)(/cancel)?", path):
                batch = self.batches.get(m.group(1))
                if batch is None:
                    return _missing("batch")
                if m.group(2) and method == "POST":
                    self._cancel(batch)
                elif method == "GET":
                    self._advance(batch)
                return 200, batch.body, "application/json"
        return None

    def encode(self, results: list[dict[str, Any]]) -> bytes:
        """An output file's bytes (through `raw_output`, when set)."""
        data = _jsonl(results)
        return self.raw_output(data) if self.raw_output is not None else data

    def _fault(self, method: str, path: str) -> Answer | None:
        """The next of `http_faults` when this request is of its kind (any provider's paths)."""
        if not self.http_faults:
            return None
        creates = method == "POST" and (path.endswith("/batches") or path.endswith(":batchGenerateContent"))
        retrieves = method == "GET" and re.search(r"/batches/[^/:]+$", path) is not None
        kind, status = self.http_faults[0]
        if (kind == "create" and creates) or (kind == "retrieve" and retrieves):
            self.http_faults.pop(0)
            error = {"error": {"message": f"emulated {status}", "type": "emulated", "code": status}}
            return status, error, "application/json", {"retry-after": "0"}
        return None

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_emu{next(self._ids)}"

    def _upload(self, headers: dict[str, str], raw: bytes) -> Answer:
        head = f"content-type: {headers.get('content-type', '')}\r\n\r\n".encode()
        message = BytesParser(policy=HTTP).parsebytes(head + raw)
        data, name, purpose = b"", "upload.jsonl", "batch"
        for part in message.iter_parts():
            payload = part.get_payload(decode=True)
            payload = payload if isinstance(payload, bytes) else b""
            if part.get_param("name", header="content-disposition") == "file":
                data, name = payload, part.get_filename() or name
            elif part.get_param("name", header="content-disposition") == "purpose":
                purpose = payload.decode()
        file_id = self._new_id("file")
        self.files[file_id] = data
        body = {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time())}
        return 200, {**body, "filename": name, "purpose": purpose, "status": "processed"}, "application/json"

    def _create(self, request: dict[str, Any]) -> Answer:
        data = self.files.get(str(request.get("input_file_id")))
        if data is None:
            return _missing("file")
        batch_id = self._new_id("batch")
        lines = [json.loads(line) for line in data.splitlines() if line.strip()]
        body: dict[str, Any] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": request.get("endpoint"),
            "errors": None,
            "input_file_id": request.get("input_file_id"),
            "completion_window": request.get("completion_window", "24h"),
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": int(time.time()),
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": request.get("metadata"),
        }
        self.batches[batch_id] = _Batch(body, lines, self.polls)
        self.created.append(batch_id)
        problem = self._invalid(lines, len(data), body["endpoint"])
        if problem is None and self.fail_next > 0:
            self.fail_next -= 1
            problem = "emulated batch failure"
        if problem is not None:
            body["status"] = "failed"
            body["errors"] = {"object": "list", "data": [{"code": "invalid_request", "message": problem}]}
        return 200, body, "application/json"

    def invalid(self, count: int, size: int) -> str | None:
        """Why a batch of `count` requests in `size` bytes is past the limits, if it is."""
        if count > self.max_requests:
            return f"a batch holds at most {self.max_requests} requests, this one {count}"
        if size > self.max_bytes:
            return f"a batch file holds at most {self.max_bytes} bytes, this one {size}"
        return None

    def stays(self, batch: _Batch) -> bool:
        """Whether an in-progress batch stays in progress at this retrieve (`hold`, `polls`, `instant`)."""
        if not (self.hold or (batch.polls_left > 0 and not self.instant)):
            return False
        batch.polls_left -= not self.hold
        return True

    def _invalid(self, lines: list[dict[str, Any]], size: int, endpoint: Any) -> str | None:
        if (problem := self.invalid(len(lines), size)) is not None:
            return problem
        ids = [line.get("custom_id") for line in lines]
        if len(set(ids)) != len(ids):
            return "custom_id values must be unique within a batch"
        if any(line.get("url") != endpoint for line in lines):
            return f"every line's url must be the batch's endpoint {endpoint}"
        return None

    def _cancel(self, batch: _Batch) -> None:
        if batch.body["status"] in ("validating", "in_progress", "finalizing"):
            batch.body["status"] = "cancelled"
            batch.body["cancelled_at"] = int(time.time())

    def _advance(self, batch: _Batch) -> None:
        status = batch.body["status"]
        if status not in _STATES[:-1]:
            return
        if status == "in_progress" and self.stays(batch):
            return
        batch.body["status"] = (
            _STATES[-1] if self.instant and not self.hold else _STATES[_STATES.index(status) + 1]
        )
        if batch.body["status"] == "completed":
            self._finish(batch)

    def _finish(self, batch: _Batch) -> None:
        done: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for line in batch.lines:
            result = self._line(line)
            (done if result["response"] and result["response"]["status_code"] == 200 else failed).append(
                result
            )
        if self.rewrite is not None:
            done = self.rewrite(done)
        for kind, results in (("output_file_id", done), ("error_file_id", failed)):
            if results:
                file_id = self._new_id("file")
                self.files[file_id] = self.encode(results) if kind == "output_file_id" else _jsonl(results)
                batch.body[kind] = file_id
        batch.body["request_counts"] |= {"completed": len(done), "failed": len(failed)}

    def _line(self, line: dict[str, Any]) -> dict[str, Any]:
        """One OpenAI batch line answered: an output line, an errored or an expired one."""
        status, body, request = self.outcome(str(line.get("url")), line.get("body"))
        result: dict[str, Any] = {"id": self._new_id("batch_req"), "custom_id": line.get("custom_id")}
        if status is None:
            message = "This request could not be executed before the completion window expired."
            return result | {"response": None, "error": {"code": body or "batch_expired", "message": message}}
        assert request is not None
        return result | {"response": _response(status, request, body), "error": None}

    def outcome(self, url: str, payload: Any) -> tuple[int | None, Any, RecordedRequest | None]:
        """A batch line answered as a live call to `url` would be (script item, wire format): its
        status and body, or (None, why, None) for a line that expired or went nowhere."""
        emulator = self.emulator
        raw = json.dumps(payload, separators=(",", ":")).encode()  # as an SDK sends it
        request = emulator._record("POST", url, {"x-batch": "1"}, raw)
        fmt = emulator._route(request)
        if fmt is None:
            return None, "invalid_url", None
        try:
            item = emulator._next_item(request)
        except Exception as exc:  # the script ran out: the line fails, as a live call would
            item = Fault(500, message=str(exc))
        if isinstance(item, Expired):
            return None, None, None
        if isinstance(item, Fault):
            return item.status, fmt.render_error(item, request), request
        reply = to_reply(item)  # type: ignore[arg-type]
        if reply.usage is None:  # estimated and cached as a live call's would be
            reply.usage = estimate_usage(reply, raw)
            reply.usage.cached_input_tokens = emulator._cache_read(fmt.cache_prefixes(request), reply.usage)
        return 200, fmt.render(reply, request), request


def _response(status: int, request: RecordedRequest, body: dict[str, Any]) -> dict[str, Any]:
    return {"status_code": status, "request_id": request.request_id, "body": body}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _missing(kind: str) -> Answer:
    return 404, {"error": {"message": f"No such {kind}", "type": "invalid_request_error"}}, "application/json"


__all__ = ["Answer", "BatchService", "Expired"]


def _jsonl(results: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in results)
