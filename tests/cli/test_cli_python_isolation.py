"""`--python-isolation` reaches the python tool; `chainform tools` shows the level in force."""

from __future__ import annotations

import json
import sys

import pytest
from cli_helpers import Scripted

from chainform.testing import tool_call

linux = pytest.mark.skipif(sys.platform != "linux", reason="the PID namespace is a Linux guard")


def _cell_pid(run, scripted: Scripted, *flags: str) -> str:
    scripted.script([tool_call("python", code="import os; os.getpid()"), "done"])
    result = run("x", "-T", "python", *flags)
    assert result.exit_code == 0, result.stderr
    return scripted.client.requests[1][0][-1].contents[0].result


@linux
def test_flag_sets_the_level(run, scripted: Scripted) -> None:
    from chainform.tools import python

    if python("").guards.isolation != "strict":
        pytest.skip("this kernel lacks a sandbox guard")
    assert _cell_pid(run, scripted) == "2\n"  # auto: PID 2 of its own namespace
    assert _cell_pid(run, scripted, "--python-isolation", "strict") == "2\n"
    assert _cell_pid(run, scripted, "--python-isolation", "process") != "2\n"


def test_bad_level_is_a_usage_error(run) -> None:
    result = run("x", "-T", "python", "--python-isolation", "jail")
    assert result.exit_code == 2
    assert "'jail' is not one of 'auto', 'strict', 'process'" in result.stderr


def test_tools_listing_shows_the_level(run) -> None:
    out = run("tools").stdout
    assert "isolation: " in out
    data = json.loads(run("tools", "--json").stdout)
    python = next(t for s in data for t in s["tools"] if t["name"] == "python")
    assert python["isolation"].split()[0] in ("strict", "partial", "process")
    current_time = next(t for s in data for t in s["tools"] if t["name"] == "current_time")
    assert "isolation" not in current_time
