"""Helpers shared by the benchmark sections: machine facts, versions, medians, JSON output.

Each section is a script run by bench/run.py in its own process, so a crash in one section is
recorded as that section's error and the others still run.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (platform.processor() is often empty)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    return {
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def versions(*packages: str) -> dict[str, str]:
    out = {}
    for name in packages:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def emit(result: dict[str, Any], out: str | None) -> None:
    """Write the section's result to `out` (a path) or stdout, with machine and date stamped on."""
    result.setdefault("machine", machine())
    result.setdefault("date", now())
    text = json.dumps(result, indent=1, default=str)
    if out:
        Path(out).write_text(text)
    else:
        sys.stdout.write(text + "\n")


def start_loopback(*args: str) -> tuple[subprocess.Popen[str], str]:
    """bench/loopback.py in its own process (its CPU time is not the client's); (process, base URL)."""
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).parent / "loopback.py"), *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"loopback server {' '.join(args)} did not start: {line!r}")
    return proc, f"http://127.0.0.1:{int(line.split()[1])}/v1"
