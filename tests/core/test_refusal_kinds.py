"""Refusals that carry a meaning whatever their status: response format and streaming."""

from __future__ import annotations

import pytest

from chainform.clients._errors import classify

LLAMA_CPP_PYTHON_500 = (
    "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}]"
)


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [
        (500, LLAMA_CPP_PYTHON_500, "response_format_rejected"),
        (422, "Input should be 'text' or 'json_object'", "response_format_rejected"),
        (500, "Input should be 'text'", "response_format_rejected"),
        (400, "json_schema is not supported by this model", "response_format_rejected"),
        (400, "Input should be 'text', 'json_object' or 'json_schema'", "bad_request"),
        (400, "response_format must be an object", "bad_request"),
        (500, "Automatic tool choice is not supported when streaming", "streaming_rejected"),
        (400, "stream: not implemented for tool calls", "streaming_rejected"),
        (500, "internal error while streaming", "server"),
        (None, "Input should be 'text' or 'json_object'", "connection"),
    ],
)
def test_classify_refusals_by_meaning(status: int | None, message: str, kind: str) -> None:
    assert classify(status, message) == kind
