"""`MapSettings`, the typed settings `chainform map` builds once: each field is a keyword `amap`
(or the rows' `chain`) takes, and a setting left at its default is not passed."""

from __future__ import annotations

import inspect
from dataclasses import fields

import pytest

from chainform._map._api import amap
from chainform._map._settings import MapSettings
from chainform.models import AsyncModel

pytestmark = pytest.mark.unit

BASE = dict(
    prompt="Sum up: {text}", system=None, tools=None, schema=None, concurrency=8,
    requests_per_minute=None, tokens_per_minute=None, transport_retries=2, log=True, run_id="r1",
    strategy="auto", chain_limit=5, options=None,
)  # fmt: skip


def test_every_setting_is_a_keyword_of_amap_or_chain() -> None:
    takes = set(inspect.signature(amap).parameters) | set(inspect.signature(AsyncModel.chain).parameters)
    assert {f.name for f in fields(MapSettings)} - takes == set()


def test_the_settings_every_run_gives_are_passed_and_defaults_are_left_out() -> None:
    assert MapSettings(**BASE).as_kwargs() == BASE  # type: ignore[arg-type]
    changed = MapSettings(**BASE, ordered=True, convert=False, batch=True, stop_at_tools=("done",))  # type: ignore[arg-type]
    assert changed.as_kwargs() == {
        **BASE,
        "ordered": True,
        "convert": False,
        "batch": True,
        "stop_at_tools": ("done",),
    }


def test_the_settings_are_immutable() -> None:
    settings = MapSettings(**BASE)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        settings.prompt = "other"  # type: ignore[misc]
