"""`kill -9` during `chainform eval`, then `--resume`: the same report as an eval never interrupted
(every figure but the latencies, which are measured), and no row sent twice."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from chainform.cli import cli
from chainform.testing.emulator import Emulator, RecordedRequest

ROWS = 48  # per cell; the killed run answers fewer than HELD of them
CONCURRENCY = 4
HELD = 20  # the killed run's rows from here on wait at the emulator until it is killed


def order(request: RecordedRequest) -> int:
    return int(re.search(r"order (\d+)", json.dumps(request.json)).group(1))


def answer(request: RecordedRequest) -> str:
    n = order(request)
    return json.dumps({"id": n, "total": n / 2})


def write_data(path: Path) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for n in range(ROWS):  # every third row's expected total is not what the model says
            handle.write(
                json.dumps({"text": f"order {n}", "expected": {"id": n, "total": n / 2 if n % 3 else 0}})
                + "\n"
            )
    return path


def argv(data: Path, emulator: Emulator, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "chainform.cli",
        "eval",
        str(data),
        "--schema",
        "id int, total float",
        "-p",
        "Extract: {text}",
        "-m",
        "openai/gpt-4.1-mini",
        "--base-url",
        emulator.base_url + "/v1",
        "--key",
        "sk-test",
        "--strategy",
        "native",
        "--strategy",
        "prompted",
        "--concurrency",
        str(CONCURRENCY),
        "--json",
        *extra,
    ]


def committed(evals: Path, cells: str = "0") -> int:
    """The rows of cell 0 (or every cell: `cells="*"`) the eval under `evals` has committed."""
    return sum(path.read_text().count("\n") for path in evals.glob(f"*/cell-{cells}.jsonl"))


def figures(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each cell's figures and rows, less what is measured (latency) or drawn (ids)."""
    out = []
    for cell, result in zip(report["cells"], report["results"], strict=False):
        kept = {k: v for k, v in cell.items() if not k.startswith("latency") and k != "run_id"}
        rows = [
            (r["key"], r["fields"], r["actual"], r["error"], r["tokens"], r["cost"], r["calls"])
            for r in result["rows"]
        ]
        out.append({"cell": kept, "rows": rows})
    return out


def test_kill_9_then_resume_reports_what_an_uninterrupted_eval_does(
    tmp_path: Path, emulator: Emulator, held_rows: Callable[..., Any]
) -> None:
    data = write_data(tmp_path / "orders.jsonl")
    emulator.default = answer
    # the uninterrupted eval, in this process (the CLI's own code; only the killed run needs a process)
    whole = CliRunner().invoke(cli, argv(data, emulator)[3:], env={"CHAINFORM_HOME": str(tmp_path / "whole")})
    assert whole.exit_code == 0, whole.output
    expected = json.loads(whole.stdout)
    assert expected["cells"][0]["rows_right"] == ROWS - (
        ROWS // 3 - 1
    )  # rows 3, 6, ... are wrong; 0 is right

    # The run to kill: rows from HELD on wait at the emulator, so the kill lands with the CLI stuck
    # (every request it has in flight held, so recorded), however slow the machine is. The two cells
    # run at once, sharing the CONCURRENCY rows in flight.
    gate = held_rows(answer, order, HELD)
    emulator.default = gate
    evals = Path(os.environ["CHAINFORM_HOME"]) / "evals"
    emulator.requests.clear()
    proc = subprocess.Popen(argv(data, emulator), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    gate.wait(proc, CONCURRENCY, lambda: committed(evals) >= 15)  # the rows before HELD are answered
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    gate.release()
    assert 15 <= committed(evals) < ROWS
    done = committed(evals, "*")
    sent_before = len(emulator.requests)
    resumed = subprocess.run(argv(data, emulator, "--resume"), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert figures(report) == figures(expected)
    # no committed row was sent again: the resume asked for the rest of each cell
    assert len(emulator.requests) - sent_before == 2 * ROWS - done
