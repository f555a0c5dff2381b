"""CLI start-up: `chainform --help` vs `llm --help` vs `python -c pass`, median of many runs.

Each command is timed as a fresh process (wall clock, output discarded), interleaved round by
round after one untimed warm-up run, so the page cache is warm for all of them alike.

    bench/.venv/bin/python bench/bench_cli.py [--repeats 20 --out FILE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import emit, median, versions


def commands() -> dict[str, list[str]]:
    bindir = Path(sys.executable).parent
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "chainform --help": [str(bindir / "chainform"), "--help"],
        "llm --help": [str(bindir / "llm"), "--help"],
    }


def time_once(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out")
    args = parser.parse_args()
    env = {**os.environ, "LLM_USER_PATH": "/tmp/bench-llm-cli", "CHAINFORM_HOME": "/tmp/bench-cf-cli"}
    cmds = commands()
    samples: dict[str, list[float]] = {}
    errors: dict[str, str] = {}
    for name, argv in cmds.items():
        try:
            time_once(argv, env)
            samples[name] = []
        except (OSError, subprocess.CalledProcessError) as exc:
            errors[name] = f"{type(exc).__name__}: {exc}"
    for _ in range(args.repeats):
        for name in samples:
            samples[name].append(time_once(cmds[name], env))
    base = median(samples.get("python -c pass", []))
    rows: dict[str, Any] = {
        name: {
            "median_ms": round(median(s), 1),
            "min_ms": round(min(s), 1),
            "over_python_ms": round(median(s) - base, 1),
        }
        for name, s in samples.items()
    }
    emit(
        {
            "repeats": args.repeats,
            "commands": rows,
            "errors": errors,
            "versions": versions("chainform", "llm", "click"),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
