"""A tool's KeyboardInterrupt during a map (issue 28 item 3): it hung the whole run before. Now the
map stops like Ctrl-C: the rows that finished are whole lines, the interrupted row and those in
flight are not written, and `--resume` runs exactly the rest."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import pytest
from click.testing import CliRunner
from map_helpers import SCHEMA, assert_exactly_once, read_lines, write_orders

import chainform as cf
from chainform.cli import cli
from chainform.testing import ScriptedClient, tool_call

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

STOP_AT = 7
TOOLS = """
def lookup(order: int) -> dict:
    "Look an order up by its number."
    if order == {stop}:
        raise KeyboardInterrupt
    return {{"order": order, "total": order / 2}}
"""


def reply(messages: Any, options: Any) -> Any:
    number = int(re.search(r"order (\d+)", next(m for m in messages if m.role == "user").text).group(1))
    if messages[-1].role == "tool":
        return json.dumps({"id": number, "total": number / 2})
    return tool_call("lookup", order=number)


def scripted(monkeypatch: pytest.MonkeyPatch) -> None:
    from chainform.cli import _map

    client = ScriptedClient([reply] * 200)
    monkeypatch.setattr(_map, "map_model", lambda name, **kw: cf.AsyncModel(client, name="scripted"))


def run_map(*args: str) -> Any:
    box: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: box.setdefault("r", CliRunner().invoke(cli, ["map", *args], catch_exceptions=False)),
        daemon=True,
    )
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the map hung"
    return box["r"]


def test_cli_map_stops_on_a_tools_keyboard_interrupt_and_resumes_exactly_once(tmp_path, monkeypatch) -> None:
    scripted(monkeypatch)
    inp, out, tools = write_orders(tmp_path / "in.jsonl", 20), tmp_path / "out.jsonl", tmp_path / "tools.py"
    tools.write_text(TOOLS.format(stop=STOP_AT))
    argv = [str(inp), "-o", str(out), "--prompt", "Extract: {text}", "--schema", SCHEMA, "-n"]
    argv += ["--functions", str(tools), "--concurrency", "2"]
    stopped = run_map(*argv)
    assert stopped.exit_code == 130, stopped.output
    assert "--resume" in stopped.stderr and "Traceback" not in stopped.stderr
    lines = read_lines(out)  # every line whole JSON
    assert len(lines) < 20 and str(STOP_AT) not in {line["_map"]["key"] for line in lines}
    assert all("value" in line for line in lines)  # no row written as an error for the interrupt
    tools.write_text(TOOLS.format(stop=-1))
    resumed = run_map(*argv, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert_exactly_once(read_lines(out), 20)


def test_library_map_raises_the_typed_interrupt_after_the_rows_that_finished() -> None:
    def lookup(order: int) -> dict:
        """Look an order up by its number."""
        if order == 3:
            raise KeyboardInterrupt
        return {"order": order}

    model = cf.Model(ScriptedClient([reply] * 20))
    rows = [{"text": f"order {n}"} for n in range(6)]
    seen: list[int] = []
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            for result in model.map(rows, prompt="{text}", tools=[lookup], concurrency=1, log=False):
                seen.append(result.index)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "the map hung"
    assert isinstance(box.get("error"), cf.ChainInterruptedError)
    assert seen == [0, 1, 2]
