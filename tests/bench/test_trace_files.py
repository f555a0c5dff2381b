"""bench/trace_files.py runs end to end: a chain and a model call against its loopback server.

The counts it prints are a measure for people (docs/benchmarks.md), so nothing here asserts them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "trace_files.py"


def test_the_trace_script_prints_a_count_for_the_chain_and_for_one_model_call() -> None:
    """...and with --functions, one line per file counted, naming the functions run in it."""
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--functions"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    counts: list[list[str]] = []
    files: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        if line.startswith("  "):
            file, _, names = line.strip().partition(": ")
            files.setdefault(counts[-1][0], []).append(file)
            assert file.endswith(".py") and names.split()
        else:
            counts.append(line.split())
    assert [line[0] for line in counts] == ["chain", "model_call"]
    assert all(len(line) == 2 and int(line[1]) == len(files[line[0]]) > 0 for line in counts)
    assert "chain/_engine.py" in files["chain"] and "chain/_engine.py" not in files["model_call"]


def test_the_list_groups_the_files_by_package_with_a_count_each() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("trace_files", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    files = ["_json.py", "cli/_prompt.py", "cli/_tools.py", "clients/profiles/openai.py"]
    assert script.grouped(files).splitlines() == [
        "  . (1): _json.py",
        "  cli (2): _prompt.py _tools.py",
        "  clients/profiles (1): openai.py",
    ]
