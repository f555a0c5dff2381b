"""Gemini's batch mode in the emulator, as the google-genai SDK calls it: the Files API's resumable
upload (`POST /upload/v1beta/files`, then the chunks to the upload URL) and download
(`GET /v1beta/files/{id}:download`), `POST /v1beta/models/{model}:batchGenerateContent` (a JSONL
file of `{"key", "request"}` lines), `GET /v1beta/batches[/{id}]` and `POST .../batches/{id}:cancel`.

A batch is BATCH_STATE_PENDING when created, RUNNING at the next retrieve, stays so for
`BatchService.polls` retrieves (or while `hold`; at the first with `instant`), then SUCCEEDED with a responses file: each line
answered as a live `generateContent` call would be (`BatchService.outcome`), `{"key", "response"}`
or `{"key", "error"}` (a `Fault`: its status; `Expired()`: DEADLINE_EXCEEDED, a row the job did not
get to). `fail_next`, `max_requests`, `max_bytes` and duplicate keys fail a batch at creation
(BATCH_STATE_FAILED), `rewrite` edits the responses lines (unknown or duplicate keys).
A request is Gemini's by its `x-goog-*` headers (the batch paths overlap OpenAI's).
"""

from __future__ import annotations

import json
import re
from typing import Any

from chainform.testing.emulator._batches import Answer, BatchService, _Batch, _now

_VERSION = r"/v1(?:beta|alpha)?"
_BATCHES = re.compile(rf"{_VERSION}/batches(?:/([^/:]+))?(:cancel)?")
_FILE = re.compile(rf"{_VERSION}/files/([^/:]+):download")
_CREATE = re.compile(rf"{_VERSION}/models/([^/:]+):batchGenerateContent")
_UPLOAD = re.compile(rf"/upload{_VERSION}/files(?:/uploads/(\d+))?")
_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch"
_JSON = "application/json"


class GeminiBatchMode:
    """The Gemini batch endpoints of one emulator (state and faults: its `BatchService`)."""

    def __init__(self, service: BatchService) -> None:
        self.service = service
        self.uploads: dict[str, tuple[bytes, dict[str, Any]]] = {}  # upload id -> (bytes so far, file)

    def answer(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Answer | None:
        if not any(name.startswith("x-goog-") for name in headers):
            return None
        if method == "POST" and (m := _UPLOAD.fullmatch(path)):
            return self._upload(m.group(1), headers, raw)
        if method == "GET" and (m := _FILE.fullmatch(path)):
            content = self.service.files.get(f"files/{m.group(1)}")
            return (200, content, "application/jsonl") if content is not None else _not_found("file")
        if method == "POST" and (m := _CREATE.fullmatch(path)):
            return self._create(m.group(1), json.loads(raw or b"{}").get("batch") or {})
        if not (m := _BATCHES.fullmatch(path)):
            return None
        name, cancel = m.groups()
        service = self.service
        if name is None:
            ops = [service.batches[i].body for i in reversed(service.created) if i.startswith("batches/")]
            return 200, {"operations": ops}, _JSON
        batch = service.batches.get(f"batches/{name}")
        if batch is None:
            return _not_found("batch")
        if cancel and method == "POST":
            if batch.body["metadata"]["state"] in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING"):
                self._end(batch, "BATCH_STATE_CANCELLED")
            return 200, {}, _JSON
        if method == "GET":
            self._advance(batch)
        return 200, batch.body, _JSON

    def _upload(self, upload_id: str | None, headers: dict[str, str], raw: bytes) -> Answer:
        """The resumable protocol: `start` gives the upload URL; chunks, the last one `finalize`."""
        service = self.service
        if upload_id is None:  # start: the file's metadata
            upload_id = str(next(service._ids))
            meta = json.loads(raw or b"{}").get("file") or {}
            self.uploads[upload_id] = (b"", meta)
            url = f"{service.emulator.base_url}/upload/v1beta/files/uploads/{upload_id}"
            return 200, {}, _JSON, {"x-goog-upload-url": url, "x-goog-upload-status": "active"}
        if upload_id not in self.uploads:
            return _not_found("upload")
        data, meta = self.uploads[upload_id]
        data += raw
        if "finalize" not in headers.get("x-goog-upload-command", ""):
            self.uploads[upload_id] = (data, meta)
            return 200, {}, _JSON, {"x-goog-upload-status": "active"}
        del self.uploads[upload_id]
        name = f"files/{service._new_id('gfile')}"
        service.files[name] = data
        file = {
            "name": name,
            "displayName": meta.get("display_name") or meta.get("displayName"),
            "mimeType": meta.get("mime_type") or meta.get("mimeType") or "application/jsonl",
            "sizeBytes": str(len(data)),
            "state": "ACTIVE",
            "createTime": _now(),
        }
        return 200, {"file": file}, _JSON, {"x-goog-upload-status": "final"}

    def _create(self, model: str, batch: dict[str, Any]) -> Answer:
        service = self.service
        source = str((batch.get("inputConfig") or {}).get("fileName"))
        data = service.files.get(source)
        if data is None:
            return _not_found("file")
        lines = [json.loads(line) for line in data.splitlines() if line.strip()]
        name = f"batches/{service._new_id('gbatch')}"
        stats = {"requestCount": str(len(lines)), "pendingRequestCount": str(len(lines))}
        metadata = {
            "@type": _TYPE,
            "name": name,
            "model": f"models/{model}",
            "displayName": batch.get("displayName"),
            "inputConfig": {"fileName": source},
            "createTime": _now(),
            "updateTime": _now(),
            "batchStats": stats,
            "state": "BATCH_STATE_PENDING",
        }
        body: dict[str, Any] = {"name": name, "metadata": metadata, "done": False}
        service.batches[name] = _Batch(body, lines, service.polls)
        service.created.append(name)
        problem = self._invalid(lines, len(data))
        if problem is not None:
            self._end(service.batches[name], "BATCH_STATE_FAILED")
            body["error"] = {"code": 400, "message": problem, "status": "INVALID_ARGUMENT"}
        return 200, body, _JSON

    def _invalid(self, lines: list[dict[str, Any]], size: int) -> str | None:
        service = self.service
        keys = [line.get("key") for line in lines]
        problem = service.invalid(len(lines), size)
        if problem is None and len(set(keys)) != len(keys):
            problem = "the key of each request must be unique within a batch"
        if problem is None and service.fail_next > 0:
            service.fail_next -= 1
            problem = "emulated batch failure"
        return problem

    def _advance(self, batch: _Batch) -> None:
        metadata = batch.body["metadata"]
        if metadata["state"] == "BATCH_STATE_PENDING":
            metadata |= {"state": "BATCH_STATE_RUNNING", "updateTime": _now()}
            if not self.service.instant:
                return
        if metadata["state"] == "BATCH_STATE_RUNNING" and not self.service.stays(batch):
            self._finish(batch)

    def _finish(self, batch: _Batch) -> None:
        service = self.service
        model = batch.body["metadata"]["model"].removeprefix("models/")
        results = [self._line(line, model) for line in batch.lines]
        if service.rewrite is not None:
            results = service.rewrite(results)
        name = f"files/{service._new_id('gfile')}"
        service.files[name] = service.encode(results)
        failed = sum("error" in r for r in results)
        batch.body["metadata"]["batchStats"] = {
            "requestCount": str(len(batch.lines)),
            "successfulRequestCount": str(len(results) - failed),
            "failedRequestCount": str(failed),
        }
        batch.body["metadata"]["output"] = {"responsesFile": name}
        batch.body["response"] = {"@type": _TYPE.replace("Batch", "BatchOutput"), "responsesFile": name}
        self._end(batch, "BATCH_STATE_SUCCEEDED")

    def _line(self, line: dict[str, Any], model: str) -> dict[str, Any]:
        """One request answered: a response, an errored line, or an expired one."""
        request = dict(line.get("request") or {})
        model = str(request.pop("model", model)).removeprefix("models/")
        status, body, _ = self.service.outcome(f"/v1beta/models/{model}:generateContent", request)
        if status is None:
            why = {
                "code": 504,
                "message": "the batch ended before this request ran",
                "status": "DEADLINE_EXCEEDED",
            }
            return {"key": line.get("key"), "error": why}
        if status != 200:
            return {"key": line.get("key"), "error": body.get("error", body)}
        return {"key": line.get("key"), "response": body}

    def _end(self, batch: _Batch, state: str) -> None:
        batch.body["metadata"] |= {"state": state, "updateTime": _now(), "endTime": _now()}
        batch.body["done"] = True


def _not_found(kind: str) -> Answer:
    return 404, {"error": {"code": 404, "message": f"No such {kind}", "status": "NOT_FOUND"}}, _JSON


__all__ = ["GeminiBatchMode"]
