"""Anthropic's Message Batches in the emulator: create, retrieve, cancel, list, results (JSONL).

A batch is `in_progress` for `BatchService.polls` retrieves (or while `hold`; none with `instant`), then `ended`; its
requests are answered then, each as a live `/v1/messages` call would be (`BatchService.outcome`),
and its results file says per custom_id `succeeded`, `errored` or `expired` (`canceled` for the
requests of a batch cancelled before it ended).
"""

from __future__ import annotations

import json
import re
from typing import Any

from chainform.testing.emulator._batches import Answer, _Batch, _missing, _now

_PATH = re.compile(r"(?:/anthropic)?/v1/messages/batches(?:/([^/]+))?(/cancel|/results)?")


class MessageBatches:
    """The Message Batches endpoints of one emulator (state and faults: its `BatchService`)."""

    def __init__(self, service: Any) -> None:
        self.service = service

    def answer(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Answer | None:
        match = _PATH.fullmatch(path)
        if match is None:
            return None
        batch_id, tail = match.groups()
        service = self.service
        if batch_id is None:
            if method == "POST":
                return self._create(json.loads(raw or b"{}"))
            data = [service.batches[i].body for i in reversed(service.created) if i.startswith("msgbatch")]
            return (
                200,
                {"data": data, "has_more": False, "first_id": None, "last_id": None},
                "application/json",
            )
        batch = service.batches.get(batch_id)
        if batch is None:
            return _missing("message batch")
        if tail == "/results":
            return 200, batch.results, "application/binary"
        if tail == "/cancel" and batch.body["processing_status"] == "in_progress":
            batch.body |= {"processing_status": "canceling", "cancel_initiated_at": _now()}
        elif tail is None:
            self._advance(batch)
        return 200, batch.body, "application/json"

    def _create(self, request: dict[str, Any]) -> Answer:
        service = self.service
        lines = list(request.get("requests") or [])
        batch_id = service._new_id("msgbatch")
        counts = {"processing": len(lines), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        body = {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "in_progress",
            "request_counts": counts,
            "created_at": _now(),
            "expires_at": _now(),
            "ended_at": None,
            "cancel_initiated_at": None,
            "archived_at": None,
            "results_url": None,
        }
        service.batches[batch_id] = _Batch(body, lines, service.polls)
        service.created.append(batch_id)
        return 200, body, "application/json"

    def _advance(self, batch: _Batch) -> None:
        status = batch.body["processing_status"]
        if status == "in_progress" and self.service.stays(batch):
            return
        if status == "ended":
            return
        results = [self._result(line, cancelled=status == "canceling") for line in batch.lines]
        if self.service.rewrite is not None:
            results = self.service.rewrite(results)
        batch.results = self.service.encode(results)
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for result in results:
            counts[result["result"]["type"]] += 1
        url = f"{self.service.emulator.base_url}/v1/messages/batches/{batch.body['id']}/results"
        batch.body |= {
            "processing_status": "ended",
            "ended_at": _now(),
            "request_counts": counts,
            "results_url": url,
        }

    def _result(self, line: dict[str, Any], cancelled: bool) -> dict[str, Any]:
        custom_id = line.get("custom_id")
        if cancelled:
            return {"custom_id": custom_id, "result": {"type": "canceled"}}
        status, body, _ = self.service.outcome("/v1/messages", line.get("params"))
        if status is None:
            return {"custom_id": custom_id, "result": {"type": "expired"}}
        if status != 200:
            return {"custom_id": custom_id, "result": {"type": "errored", "error": body}}
        return {"custom_id": custom_id, "result": {"type": "succeeded", "message": body}}


__all__ = ["MessageBatches"]
