"""10,000 rows with a schema and a tool: every row once, and memory does not grow with the row count.

Each run is the CLI in a child process; its peak resident memory comes from the kernel's resource
usage for that child (`os.wait4`), not from a timing. The always-on test runs `chainform map` on a
scripted model in the child (the whole map path, no HTTP: seconds); the emulator one adds the
openai SDK and HTTP (about 20,000 requests: minutes on 2 cores, so it is opt-in).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from map_helpers import TOOLS_PY, answer_with_tool, map_argv, read_lines, start_cli, write_orders

from chainform.testing.emulator import Emulator

CHILD = Path(__file__).with_name("scripted_map_child.py")


def child_peak_mb(argv: list[str]) -> float:
    proc = subprocess.Popen([sys.executable, *argv])  # inherits the `home` fixture's CHAINFORM_HOME
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return usage.ru_maxrss / 1024  # KiB on Linux


def test_scripted_peak_memory_at_10000_rows_is_within_50_mb_of_1000_rows(tmp_path):
    tools = tmp_path / "tools.py"
    tools.write_text(TOOLS_PY)
    peaks = {}
    for count in (1_000, 10_000):
        inp = write_orders(tmp_path / f"in{count}.jsonl", count)
        out = tmp_path / f"out{count}.jsonl"
        peaks[count] = child_peak_mb([str(CHILD), str(inp), str(out), str(tools)])
        lines = read_lines(out)
        assert sorted(line["_map"]["index"] for line in lines) == list(range(count))
        assert all(line["value"] == {"id": line["id"], "total": line["id"] / 2} for line in lines)
    print(f"peak RSS (scripted): {peaks[1_000]:.1f} MB at 1,000 rows, {peaks[10_000]:.1f} MB at 10,000")
    assert peaks[10_000] - peaks[1_000] < 50, peaks


def peak_rss_mb(tmp_path: Path, emu: Emulator, count: int) -> tuple[float, list[dict]]:
    tools = tmp_path / "tools.py"
    tools.write_text(TOOLS_PY)
    inp = write_orders(tmp_path / f"in{count}.jsonl", count)
    out = tmp_path / f"out{count}.jsonl"
    argv = map_argv(inp, out, emu.base_url, tools, "--concurrency", "32")
    proc = start_cli(argv, stdout=None, stderr=None)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0
    return usage.ru_maxrss / 1024, read_lines(out)  # ru_maxrss is in KiB on Linux


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("CHAINFORM_SLOW_TESTS"),
    reason="11,000 rows through the emulator and the openai SDK: minutes on 2 cores; "
    "set CHAINFORM_SLOW_TESTS=1 to run it",
)
def test_emulator_peak_memory_at_10000_rows_is_within_50_mb_of_1000_rows(tmp_path, emulator: Emulator):
    emulator.default, emulator.record = answer_with_tool, False
    small, _ = peak_rss_mb(tmp_path, emulator, 1_000)
    large, lines = peak_rss_mb(tmp_path, emulator, 10_000)
    assert sorted(line["_map"]["index"] for line in lines) == list(range(10_000))
    assert all(line["value"] == {"id": line["id"], "total": line["id"] / 2} for line in lines)
    print(f"peak RSS: {small:.1f} MB at 1,000 rows, {large:.1f} MB at 10,000 rows")
    assert large - small < 50, (small, large)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0
