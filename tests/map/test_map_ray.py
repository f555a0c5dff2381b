"""Ray Data: `chainform map --ray` on a local `ray.init(num_cpus=2)` maps rows through the emulator on two
Ray workers, each row exactly once; `MapBatches`, what each Ray worker runs, returns the batch it is given
plus the value and error columns."""

from __future__ import annotations

import sys

import numpy as np
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


def test_cli_ray_maps_every_row_exactly_once(local_ray, tmp_path, emulator: Emulator):
    # 40 rows at --concurrency 2: five batches of 8 rows (--concurrency x 4) for two Ray workers
    inp = write_orders(tmp_path / "in.jsonl", 40)
    out = tmp_path / "out.jsonl"
    tools = tmp_path / "tools.py"
    tools.write_text(TOOLS_PY)
    emulator.default, emulator.record = answer_with_tool, False
    argv = map_argv(inp, out, emulator.base_url, tools, "--ray", "--concurrency", "2", "-n")
    result = CliRunner().invoke(cli, ["map", *argv], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = read_lines(out)
    assert sorted(line["_map"]["index"] for line in lines) == list(range(40))
    assert all(line["value"] == {"id": line["id"], "total": line["id"] / 2} for line in lines)


def test_map_batches_returns_value_and_error_columns(emulator: Emulator):
    """`MapBatches` called as Ray Data calls it, on numpy columns (Ray itself runs it in the test above)."""
    from chainform.ray import MapBatches

    schema = {"type": "object", "properties": {"id": {"type": "integer"}, "total": {"type": "number"}}}
    emulator.default, emulator.record = answer_with_tool, False
    map_batches = MapBatches(
        MODEL,
        prompt="Extract: {text}",
        schema=schema,
        tools=[lookup],
        model_options={"key": "sk-test", "base_url": emulator.base_url + "/v1", "profile": "openai"},
    )
    ids = np.arange(10)
    rows = table(map_batches({"id": ids, "text": np.array([f"order {n}" for n in ids])}))
    # and a batch whose rows have no `text`
    rows += table(map_batches({"id": np.array([99]), "note": np.array(["no text"])}))
    assert [r["id"] for r in rows] == [*range(10), 99]
    for r in rows:
        if r["id"] == 99:
            assert r["value"] is None and r["error"]["phase"] == "input"
        else:
            assert r["error"] is None and r["value"] == {"id": r["id"], "total": r["id"] / 2}
            assert r["tokens"] > 0


def table(columns: dict[str, list]) -> list[dict]:
    """A batch's columns as rows; every column as long as the batch."""
    count = len(columns["id"])
    assert all(len(values) == count for values in columns.values()), columns
    return [{name: values[i] for name, values in columns.items()} for i in range(count)]
