"""Ray Data: a local `ray.init(num_cpus=2)` maps 200 rows through the emulator, each exactly once."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner
from map_helpers import MODEL, TOOLS_PY, answer_with_tool, map_argv, read_lines, write_orders

from chainform.cli import cli
from chainform.testing.emulator import Emulator

ray = pytest.importorskip("ray")
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # Ray's own, on start-up
    pytest.mark.xdist_group("ray"),  # one worker starts the module's local Ray once
]


def lookup(order: int) -> dict:
    "Look an order up by its number."
    return {"order": order, "total": order / 2}


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    # this module is not importable on Ray's workers: ship its functions (the tool) by value
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        yield
    finally:
        ray.shutdown()


def test_cli_ray_maps_200_rows_exactly_once(local_ray, tmp_path, emulator: Emulator):
    # 200 rows at --concurrency 8: 7 batches of up to 32 rows for two Ray workers
    inp = write_orders(tmp_path / "in.jsonl", 200)
    out = tmp_path / "out.jsonl"
    tools = tmp_path / "tools.py"
    tools.write_text(TOOLS_PY)
    emulator.default, emulator.record = answer_with_tool, False
    argv = map_argv(inp, out, emulator.base_url, tools, "--ray", "--concurrency", "8", "-n")
    result = CliRunner().invoke(cli, ["map", *argv], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = read_lines(out)
    assert sorted(line["_map"]["index"] for line in lines) == list(range(200))
    assert all(line["value"] == {"id": line["id"], "total": line["id"] / 2} for line in lines)


def test_map_batches_returns_value_and_error_columns(local_ray, emulator: Emulator):
    from chainform.ray import MapBatches

    items = [{"id": n, "text": f"order {n}"} for n in range(40)] + [{"id": 99, "note": "no text"}]
    schema = {"type": "object", "properties": {"id": {"type": "integer"}, "total": {"type": "number"}}}
    emulator.default, emulator.record = answer_with_tool, False
    dataset = ray.data.from_items(items).map_batches(
        MapBatches,
        fn_constructor_kwargs={
            "model": MODEL,
            "prompt": "Extract: {text}",
            "schema": schema,
            "tools": [lookup],
            "model_options": {"key": "sk-test", "base_url": emulator.base_url + "/v1", "profile": "openai"},
        },
        compute=ray.data.ActorPoolStrategy(size=2),
        batch_size=10,
        num_cpus=0.5,
    )
    rows = dataset.take_all()
    assert sorted(r["id"] for r in rows) == [*range(40), 99]
    for r in rows:
        if r["id"] == 99:
            assert r["value"] is None and r["error"]["phase"] == "input"
        else:
            assert r["error"] is None and r["value"] == {"id": r["id"], "total": r["id"] / 2}
            assert r["tokens"] > 0
