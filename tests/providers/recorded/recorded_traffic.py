"""Recorded real provider traffic (`../shared/data/recorded-traffic`, VCR-style YAML): its
exchanges, which chainform adapter speaks each one's wire format, and that adapter pointed at an
emulator that replays the recorded response byte for byte (`RawResponse`).

The data is read where it lies, never copied into the repository; the tests skip when it is absent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "recorded-traffic"

# The recorded URI's path (query and fragment dropped) -> the wire format chainform speaks there.
WIRE_ROUTES = (
    (re.compile(r"/chat/completions$"), "chat"),
    (re.compile(r"/v1/responses$"), "responses"),
    (re.compile(r"/v1/messages$"), "anthropic"),
    (re.compile(r":(?:stream)?[gG]enerateContent$"), "gemini"),
    (re.compile(r"/model/[^/]+/converse(?:-stream)?$"), "bedrock"),
)
# Exchanges of APIs chainform does not speak, or of endpoints no chain calls, by why.
NOT_CHAT = (
    (re.compile(r"api\.cohere\.com/"), "Cohere's v2 chat API: no chainform adapter"),
    (re.compile(r"count[_-]?[tT]okens|/input_tokens$"), "token counting: chainform never asks for it"),
    (re.compile(r"/responses/compact$"), "Responses compaction: chainform sends whole conversations"),
    (re.compile(r"/v1/(files|vector_stores|conversations)|fileSearchStores"), "files and stores API"),
    (re.compile(r"/v1/responses/resp_"), "a stored response fetched by id (chainform never stores)"),
    (re.compile(r"oauth2\.googleapis\.com"), "Google OAuth token exchange"),
)
_DROPPED_HEADERS = frozenset(
    {"content-length", "transfer-encoding", "content-encoding", "connection", "content-type"}
)


@dataclass
class Exchange:
    """One recorded request and its answer; `body` is the answer's bytes as they were sent."""

    file: str  # "test_openai/test_x.yaml"
    index: int
    method: str
    uri: str
    request: Any  # the request's JSON body (None when it was not JSON)
    status: int
    content_type: str
    headers: dict[str, str]
    body: bytes
    parsed: Any  # the answer's JSON, when it was recorded parsed

    @property
    def path(self) -> str:
        return re.split(r"[?#]", self.uri)[0]

    @property
    def wire(self) -> str | None:
        """The wire format of a model call chainform makes, None for any other exchange."""
        if self.method.upper() != "POST":
            return None
        for pattern, wire in WIRE_ROUTES:
            if pattern.search(self.path):
                return wire
        return None

    @property
    def not_chat(self) -> str | None:
        """Why this exchange is no model call of chainform's (None: it is one)."""
        if self.wire is not None and not any(p.search(self.uri) for p, _ in NOT_CHAT):
            return None
        for pattern, why in NOT_CHAT:
            if pattern.search(self.uri):
                return why
        if self.method.upper() != "POST":
            return f"{self.method} of a document or resource the recorded test fetched"
        return "not a model call of any chainform adapter"

    @property
    def streamed(self) -> bool:
        """Whether the answer came as a stream (server-sent events, or AWS's event stream)."""
        return self.content_type.startswith(("text/event-stream", "application/vnd.amazon.eventstream"))

    @property
    def answer(self) -> Any:
        """The answer as its reader takes it: the JSON of a whole answer, the bytes of a stream."""
        return (
            self.body
            if self.streamed
            else (self.parsed if self.parsed is not None else json.loads(self.body))
        )

    @property
    def model(self) -> str:
        if isinstance(self.request, dict) and isinstance(self.request.get("model"), str):
            return str(self.request["model"])
        found = re.search(r"/models/([^/:]+):|/model/([^/]+)/converse", self.path)
        return next((g for g in found.groups() if g), "model") if found else "model"

    @property
    def reply_headers(self) -> dict[str, str]:
        return {k: v for k, v in self.headers.items() if k.lower() not in _DROPPED_HEADERS}


def _body(response: dict[str, Any]) -> tuple[bytes, Any]:
    if "parsed_body" in response:
        parsed = response["parsed_body"]
        return json.dumps(parsed, ensure_ascii=False, indent=2).encode(), parsed
    raw = (response.get("body") or {}).get("string", b"")
    return (raw.encode() if isinstance(raw, str) else bytes(raw)), None


def _request_body(request: dict[str, Any]) -> Any:
    if "parsed_body" in request:
        return request["parsed_body"]
    raw = request.get("body")
    raw = raw.get("string") if isinstance(raw, dict) else raw
    try:
        return json.loads(raw) if raw else None
    except (TypeError, ValueError):
        return None


@cache
def exchanges(file: str) -> tuple[Exchange, ...] | str:
    """A file's HTTP exchanges, or why it has none chainform could take (gRPC samples)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's: ten times faster
    data = yaml.load((ROOT / file).read_text(), Loader=loader)
    out = []
    for index, interaction in enumerate(data.get("interactions") or ()):
        if "request" not in interaction:
            return "xAI's gRPC API (protobuf samples, not HTTP JSON): no chainform adapter"
        request, response = interaction["request"], interaction["response"]
        headers = {
            k.lower(): v[0] if isinstance(v, list) else str(v)
            for k, v in (response.get("headers") or {}).items()
        }
        body, parsed = _body(response)
        out.append(
            Exchange(
                file=file,
                index=index,
                method=str(request["method"]),
                uri=str(request["uri"]),
                request=_request_body(request),
                status=int(response["status"]["code"]),
                content_type=headers.get("content-type", "application/json"),
                headers=headers,
                body=body,
                parsed=parsed,
            )
        )
    return tuple(out)


def files() -> list[str]:
    """Every recorded file, relative to ROOT (empty when the data is not there)."""
    if not ROOT.is_dir():
        return []
    return sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("*/*.yaml"))


def chat_calls(file: str) -> list[Exchange]:
    """A parametrized test's file: its exchanges that are model calls chainform makes. Skips the
    test when the data is absent or the file holds no HTTP exchanges (gRPC samples)."""
    if not ROOT.is_dir():
        pytest.skip(f"no recorded traffic at {ROOT}")
    recorded = exchanges(file)
    if isinstance(recorded, str):
        pytest.skip(recorded)
    return [ex for ex in recorded if ex.not_chat is None]
