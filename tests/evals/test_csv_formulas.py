"""The eval CSV's cells are data: none a spreadsheet would run as a formula."""

from __future__ import annotations

import pytest

from chainform.evals._csv import _plain

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "text",
    ["-2+3+cmd|' /C calc'!A0", "-1+1", "-5*A1", '-.5+HYPERLINK("http://x")', "-1e3-1", "-", "--5"],
)
def test_a_leading_minus_that_is_not_a_number_is_quoted(text: str) -> None:
    # was: '-' followed by a digit or '.' passed as a number, so "-2+3+cmd|..." reached Excel as a formula
    assert _plain(text) == "'" + text


@pytest.mark.parametrize("text", ["-5", "-0.5", "-.5", "-5.", "-1e-3", "-2E+10", "5", "plain"])
def test_numbers_and_plain_text_are_left_alone(text: str) -> None:
    assert _plain(text) == text
