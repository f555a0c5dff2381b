"""Shared pieces of the map tests: an emulator answer per row, input files, the CLI in a subprocess."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from chainform.testing import tool_call
from chainform.testing.emulator import RecordedRequest

MODEL = "openai/gpt-4.1-mini"
SCHEMA = "id int, total float"
TOOLS_PY = """
def lookup(order: int) -> dict:
    "Look an order up by its number."
    return {"order": order, "total": order / 2}
"""


def user_text(request: RecordedRequest) -> str:
    for message in request.json.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "".join(part.get("text", "") for part in content)
            return str(content)
    return ""


def order_number(request: RecordedRequest) -> int:
    found = re.search(r"order (\d+)", user_text(request))
    assert found, user_text(request)
    return int(found.group(1))


def answer_with_tool(request: RecordedRequest) -> Any:
    """First turn: call `lookup` for the row's order; after the tool result: the JSON answer."""
    n = order_number(request)
    messages = request.json.get("messages", [])
    if messages and messages[-1].get("role") == "tool":
        return json.dumps({"id": n, "total": n / 2})
    return tool_call("lookup", order=n)


def answer_text(request: RecordedRequest) -> Any:
    return f"done {order_number(request)}"


def write_orders(path: Path, count: int) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for n in range(count):
            handle.write(json.dumps({"id": n, "text": f"order {n}"}) + "\n")
    return path


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def map_argv(inp: Path, out: Path, base_url: str, tools_file: Path | None, *extra: str) -> list[str]:
    argv = [str(inp), "-o", str(out), "--prompt", "Extract: {text}", "-m", MODEL]
    argv += [
        "--base-url",
        base_url + "/v1",
        "--key",
        "sk-test",
        "--profile",
        "openai",
    ]  # the emulator plays OpenAI
    if tools_file is not None:
        argv += ["--schema", SCHEMA, "--functions", str(tools_file)]
    return argv + list(extra)


def start_cli(argv: list[str], **popen: Any) -> subprocess.Popen[str]:
    """`chainform map` in a child process; it inherits the test's CHAINFORM_HOME (the `home` fixture)."""
    return subprocess.Popen(
        [sys.executable, "-m", "chainform.cli", "map", *argv],
        text=True,
        **{"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **popen},
    )


def assert_exactly_once(lines: list[dict[str, Any]], count: int) -> None:
    """Every row of a run once, each a value (none missing, none twice, one run id)."""
    keys = [line["_map"]["key"] for line in lines]
    assert sorted(keys, key=int) == [str(n) for n in range(count)]  # none missing, none twice
    assert len({line["_map"]["run"] for line in lines}) == 1
    for line in lines:
        assert line["value"] == {"id": line["id"], "total": line["id"] / 2}
