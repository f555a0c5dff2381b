"""ProviderError.kind: the meaning of a provider failure, set by adapters, derived from status otherwise."""

from __future__ import annotations

import pytest

from chainform.clients._errors import classify
from chainform.errors import ProviderError, StreamInterruptedError

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (None, "connection"),
        (401, "auth"),
        (403, "auth"),
        (429, "rate_limit"),
        (408, "timeout"),
        (504, "timeout"),
        (500, "server"),
        (503, "server"),
        (400, "bad_request"),
        (404, "bad_request"),
    ],
)
def test_kind_derived_from_status(status: int | None, kind: str) -> None:
    assert ProviderError("x", status=status).kind == kind


def test_adapter_kind_wins_and_stream_break_is_connection() -> None:
    assert (
        ProviderError("x", status=500, kind="tools_with_schema_rejected").kind == "tools_with_schema_rejected"
    )
    assert StreamInterruptedError("dropped").kind == "connection"


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [
        (400, "response_format json_schema is not supported with tools", "tools_with_schema_rejected"),
        (
            422,
            "Function calling together with response_mime_type is unsupported",
            "tools_with_schema_rejected",
        ),
        (400, "response_format must be an object", "bad_request"),
        (400, "tool 'x' is not defined", "bad_request"),
        (500, "response_format with tools failed", "server"),
    ],
)
def test_classify_reads_wording_only_for_refusals(status: int, message: str, kind: str) -> None:
    assert classify(status, message) == kind


def test_one_retry_policy_for_every_adapter() -> None:
    from chainform.clients._errors import is_retryable

    assert [s for s in (400, 401, 403, 404, 422, 501, 505) if is_retryable(s)] == []
    assert all(is_retryable(s) for s in (None, 408, 409, 429, 500, 502, 503, 504, 529))
