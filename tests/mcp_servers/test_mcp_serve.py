"""`chainform mcp serve`, driven by the mcp SDK's own client over stdio."""

from __future__ import annotations

import os
import sys

import pytest
from mcp import Client, StdioServerParameters

from chainform.tools import get_schema

FUNCTIONS = '''
def factorial(n: int) -> int:
    """n! for a whole number n."""
    if n < 0:
        raise ValueError("n must not be negative")
    import math
    return math.factorial(n)


def describe(name: str, tags: list[str] = []) -> dict:
    """A record with a name and tags."""
    return {"name": name, "tags": tags}
'''


@pytest.fixture
def serve_params(tmp_path) -> StdioServerParameters:
    path = tmp_path / "tools.py"
    path.write_text(FUNCTIONS)
    args = ["-m", "chainform.cli", "mcp", "serve", "--functions", str(path), "-T", "current_time"]
    return StdioServerParameters(command=sys.executable, args=args, env={"CHAINFORM_HOME": str(tmp_path)})


async def test_sdk_client_lists_and_calls_served_tools(serve_params: StdioServerParameters) -> None:
    namespace: dict[str, object] = {}
    exec(FUNCTIONS, namespace)
    async with Client(serve_params) as client:
        listing = (await client.list_tools()).tools
        by_name = {t.name: t for t in listing}
        assert sorted(by_name) == ["current_time", "describe", "factorial"]
        assert by_name["factorial"].input_schema == get_schema(namespace["factorial"])["parameters"]
        assert by_name["factorial"].description == get_schema(namespace["factorial"])["description"]

        result = await client.call_tool("factorial", {"n": 5})
        assert not result.is_error
        assert result.content[0].text == "120"

        record = await client.call_tool("describe", {"name": "x", "tags": ["a"]})
        assert record.structured_content == {"name": "x", "tags": ["a"]}

        bad = await client.call_tool("factorial", {"n": "five"})
        assert bad.is_error and "n" in bad.content[0].text

        raised = await client.call_tool("factorial", {"n": -1})
        assert raised.is_error and "must not be negative" in raised.content[0].text

        clock = await client.call_tool("current_time", {"timezone": "UTC"})
        assert clock.structured_content is not None and "utc" in clock.structured_content


def test_serve_without_tools_is_a_usage_error() -> None:
    from click.testing import CliRunner

    from chainform.cli import cli

    result = CliRunner().invoke(cli, ["mcp", "serve"])
    assert result.exit_code == 2
    assert "nothing to serve" in result.output


@pytest.mark.parametrize("isolation", ["process", "auto"])
async def test_serve_python_isolation_is_applied_and_said(tmp_path, isolation: str) -> None:
    from chainform.tools import PythonTool

    expected = PythonTool(isolation=isolation).isolation_in_force()  # type: ignore[arg-type]
    args = ["-m", "chainform.cli", "mcp", "serve", "-T", "python", "--python-isolation", isolation]
    env = {"CHAINFORM_HOME": str(tmp_path), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    async with Client(params) as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.description.endswith(f"Isolation in force: {expected}.")
        if isolation == "process":
            assert expected == "process" and "no network" not in tool.description
        result = await client.call_tool("python", {"code": "print(6 * 7)"})
        assert "42" in result.content[0].text


def test_serve_rejects_an_unknown_isolation_level() -> None:
    from click.testing import CliRunner

    from chainform.cli import cli

    result = CliRunner().invoke(cli, ["mcp", "serve", "-T", "python", "--python-isolation", "none"])
    assert result.exit_code == 2 and "--python-isolation" in result.output
