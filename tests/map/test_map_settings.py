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


def test_map_ray_gets_the_settings_once_and_says_a_half_done_row_starts_over(tmp_path, monkeypatch) -> None:
    from click.testing import CliRunner

    import chainform.ray
    from chainform.cli import cli

    given: list[dict[str, object]] = []

    def run_job(address, rows, model, key, base_url, workers, settings, **kwargs):  # type: ignore[no-untyped-def]
        given.append(settings)
        return iter(())

    monkeypatch.setattr(chainform.ray, "run_job", run_job)
    (tmp_path / "in.jsonl").write_text('{"text": "a"}\n')
    out = tmp_path / "out.jsonl"
    argv = [
        "map",
        str(tmp_path / "in.jsonl"),
        "--output",
        str(out),
        "-p",
        "Sum up: {text}",
        "-m",
        "openai/gpt-4.1-mini",
    ]
    first = CliRunner().invoke(cli, [*argv, "--ray", "--key", "sk-test"], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    assert "starts over" not in first.stderr
    again = CliRunner().invoke(cli, [*argv, "--ray", "--key", "sk-test", "--resume"], catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert "with --ray, a row that stopped halfway starts over" in again.stderr
    assert [sorted(s) for s in given] == [
        sorted(BASE)
    ] * 2  # no resume= for Ray: its rows' chains are not found
    assert given[0]["prompt"] == "Sum up: {text}" and given[0]["concurrency"] == 8
