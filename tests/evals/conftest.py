"""The evals tests' shared fixture: the 'bad' and 'good' scripted models priced at $1 a call."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chainform.pricing import PRICES, set_price


@pytest.fixture
def priced() -> Iterator[None]:
    PRICES.clear()
    set_price("bad", "10000", "0")  # 100 input tokens a call: $1 a call
    set_price("good", "10000", "0")
    yield
    PRICES.clear()
