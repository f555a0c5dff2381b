"""bench/bench_eval.py runs end to end on a few rows and prints eval/map at both think times.

The ratios it prints are a measure for people (docs/benchmarks.md), so nothing here asserts them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_eval.py"


def test_the_eval_bench_prints_eval_over_map_at_zero_and_at_the_given_think_time(tmp_path: Path) -> None:
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "eval.json"
    args = ["--rows", "30", "--map-rows", "20", "--rounds", "1", "--delay", "0.002", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(out.read_text())
    scoring, timed = results[:2], results[2:]
    assert [r["rows"] for r in scoring] == [30, 30]
    assert [(r["rows"], r["delay_ms"]) for r in timed] == [(20, 0), (20, 2)]
    assert all(r["ratio"] > 0 and r["cpu_ratio"] > 0 for r in timed)
    ratio_lines = [line for line in done.stdout.splitlines() if line.startswith("eval/map at")]
    assert [line.split()[2] for line in ratio_lines] == ["0", "2"]
