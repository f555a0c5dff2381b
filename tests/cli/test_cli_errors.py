"""Bad input of each kind: one line on stderr, a distinct exit code, no traceback unless --debug."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from cli_helpers import Scripted
from click.testing import CliRunner

from chainform.cli import cli
from chainform.errors import (
    ChainError,
    FormattingError,
    MissingKeyError,
    ModelNotFoundError,
    ProviderError,
    ToolError,
)


def _one_line_error(result, code: int) -> str:
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    return result.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["x", "--schema", "{bad json"], "not valid JSON"),
        (["x", "--schema", "name blob"], "unknown type"),
        (["x", "--schema", "missing/file.json"], "schema file not found"),
        (["x", "--schema", '{"type": 12}'], "JSON Schema"),
        (["x", "--schema", "a", "--schema-multi", "b"], "not both"),
        (["x", "-T", "no_such_tool"], "unknown tool 'no_such_tool'"),
        (["x", "--functions", "def broken(:"], "syntax error"),
        (["x", "--functions", "x = 1"], "no public function"),
        (["x", "--functions", "nowhere.py"], "file not found"),
        (["x", "--functions", "raise RuntimeError('boom')"], "RuntimeError: boom"),
        (["x", "--strategy", "magic"], "magic"),
        (["x", "--format-context", "everything"], "everything"),
        (["x", "--cl", "0"], "0"),
        (["x", "-c", "--cid", "abc"], "not both"),
    ],
)
def test_cli_usage_errors(run, scripted: Scripted, args: list[str], needle: str) -> None:
    scripted.script([])
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.stderr
    assert needle in result.stderr and "Traceback" not in result.stderr


def test_cli_no_prompt(run) -> None:
    result = CliRunner().invoke(cli, ["prompt"], input="")
    assert result.exit_code == 2 and "no prompt given" in result.stderr


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ProviderError("rate limited", status=429, provider="openai"), 3),
        (MissingKeyError("No API key for 'openai'"), 3),
        (ModelNotFoundError("Unknown model 'x'"), 3),
        (ToolError("tool exploded"), 5),
        (ChainError("loop failed"), 5),
        (FormattingError("format failed", context="ctx"), 4),
        (RuntimeError("surprise"), 1),
    ],
)
def test_cli_error_exit_codes(run, scripted: Scripted, error: BaseException, code: int) -> None:
    scripted.script([error])
    line = _one_line_error(CliRunner().invoke(cli, ["prompt", "hello"]), code)
    assert line.startswith("Error: ")


def test_cli_failed_chain_is_logged(run, scripted: Scripted) -> None:
    from chainform.store import Store

    scripted.script([ProviderError("down", status=503)])
    CliRunner().invoke(cli, ["prompt", "hello"])
    [row] = Store().recent()
    assert row.error and "down" in row.error


def test_cli_debug_shows_traceback(run, scripted: Scripted) -> None:
    scripted.script([RuntimeError("surprise")])
    result = CliRunner().invoke(cli, ["prompt", "hello", "--debug"])
    assert result.exit_code != 0 and isinstance(result.exception, RuntimeError)


def _real(*args: str, env_extra: dict[str, str] | None = None, home=None) -> subprocess.CompletedProcess[str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["CHAINFORM_HOME"] = str(home)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "chainform.cli", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_cli_real_unknown_model_missing_key_dead_server(home) -> None:
    unknown = _real("hi", "-m", "nope/none", home=home)
    assert unknown.returncode == 3 and "Unknown provider 'nope'" in unknown.stderr
    missing = _real("hi", "-m", "openai/gpt-4.1-mini", home=home)
    assert missing.returncode == 3 and "No API key" in missing.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    dead = _real(
        "hi",
        "-m",
        "openai/gpt-4.1-mini",
        "--key",
        "sk-x",
        "--base-url",
        f"http://127.0.0.1:{port}/v1",
        "-o",
        "max_retries",
        "0",
        home=home,
    )
    assert dead.returncode == 3 and dead.stderr.count("\n") == 1 and "Traceback" not in dead.stderr
    assert "sk-x" not in dead.stderr


WARNS = """
import sys, warnings
sys.argv = ["chainform", *sys.argv[1:], "--version"]
from chainform.cli import main
try:
    main()
except SystemExit:
    pass
warnings.warn("chainform: could not log a model call: the disk is full", RuntimeWarning)
"""


def test_the_command_says_a_warning_in_one_line_and_debug_keeps_the_source(tmp_path) -> None:
    def stderr(*args: str, debug: str = "") -> str:
        env = {**os.environ, "CHAINFORM_DEBUG": debug}
        done = subprocess.run(
            [sys.executable, "-c", WARNS, *args], capture_output=True, text=True, timeout=60, env=env
        )
        return done.stderr

    assert stderr() == "Warning: could not log a model call: the disk is full\n"
    full = stderr("--debug")
    assert "RuntimeWarning: chainform: could not log a model call: the disk is full" in full
    assert full.startswith("<string>:9: ")  # Python's form names the file and line
    assert stderr(debug="1") == full
