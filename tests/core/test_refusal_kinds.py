"""Refusals that carry a meaning whatever their status: response format, streaming, tool choice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chainform.clients._errors import classify, is_rejection, refuses_forced_choice

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

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
        (400, "tool_choice 'required' is not supported by this model", "tool_choice_rejected"),
        (400, "tool_choice must be one of 'none', 'auto'", "tool_choice_rejected"),
        (None, "Input should be 'text' or 'json_object'", "connection"),
    ],
)
def test_classify_refusals_by_meaning(status: int | None, message: str, kind: str) -> None:
    assert classify(status, message) == kind


@pytest.mark.parametrize(
    ("status", "message", "forced", "refused"),
    [
        (500, "", True, True),  # llama-cpp-python's chatml-function-calling: `assert tool_choice == "auto"`
        (500, "", False, False),  # a bare 500 to a request that forced nothing: a server fault
        (500, "out of memory", True, False),
        (400, "tool_choice: invalid value", True, True),
        (200, "", True, False),
        (None, "", True, False),
    ],
)
def test_a_refused_forced_tool_choice(status: int | None, message: str, forced: bool, refused: bool) -> None:
    assert refuses_forced_choice(status, message, forced) is refused


def test_a_tool_choice_refusal_is_a_rejection_never_retried() -> None:
    assert is_rejection(400, "tool_choice 'required' is not supported")


REAL = json.loads((Path(__file__).parent / "data" / "forced_choice_refusals.json").read_text())["refusals"]


@pytest.mark.parametrize("refusal", REAL, ids=[r["provider"] for r in REAL])
def test_each_providers_real_wording_of_a_refused_forced_choice(refusal: dict[str, object]) -> None:
    status, message = int(refusal["status"]), str(refusal["message"])  # type: ignore[call-overload]
    assert classify(status, message) == "tool_choice_rejected"
    assert refuses_forced_choice(status, message, forced=True)
    assert is_rejection(status, message)  # never retried: the same request gets the same answer


@pytest.mark.parametrize(
    "message",
    [
        "Thinking is not enabled for models/gemini-2.0-flash",
        "Function call is missing a thought_signature in functionCall parts.",
        "tools: each tool must have a name",
    ],
)
def test_other_refusals_near_that_wording_are_not_a_tool_choice_refusal(message: str) -> None:
    assert classify(400, message) != "tool_choice_rejected"
