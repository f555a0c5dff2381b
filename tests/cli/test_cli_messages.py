"""Messages for a CLI user: a missing key names `--key` and `chainform keys set` (the library's
message stays Python's); the python tool's isolation warning is said once, short, and never on a
pipe unless `-v`."""

from __future__ import annotations

import sys
import warnings

import pytest
from cli_helpers import Scripted
from click.testing import CliRunner, Result

from chainform.cli import cli
from chainform.errors import MissingKeyError
from chainform.testing import tool_call

# These tests compare stderr exactly: a socket another test on this worker left open, collected while
# one runs, would add its ResourceWarning to it (CI, two workers a CPU). Python ignores those by default.
pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

WARNS = (
    "def probe() -> int:\n"
    "    import warnings\n"
    "    warnings.warn('chainform: the python tool runs with isolation auto (missing: landlock: kernel 5.4)', RuntimeWarning)\n"
    "    return 1\n"
)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), input="")


def test_a_missing_key_names_the_cli_ways(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = invoke("prompt", "hi", "-m", "openai/gpt-4.1-mini")
    assert result.exit_code == 3 and result.stderr.count("\n") == 1
    assert result.stderr == (
        "Error: No API key for 'openai': pass --key KEY, set $OPENAI_API_KEY, "
        "or store one with `chainform keys set openai`.\n"
    )
    from chainform.models import get_model

    with pytest.raises(MissingKeyError, match=r"pass key=\.\.\. to get_model\(\)"):
        get_model("openai/gpt-4.1-mini")


def run_probe(scripted: Scripted, *extra: str) -> Result:
    scripted.script([[tool_call("probe"), tool_call("probe")], tool_call("probe"), "done"])
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # as a fresh process would: each warning is shown
        warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: (
            sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))
        )
        return invoke("prompt", "probe it", "-m", "openai/gpt-4.1-mini", "--functions", WARNS, *extra)


def test_the_isolation_warning_is_not_said_on_a_pipe(scripted: Scripted) -> None:
    result = run_probe(scripted)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


def test_on_a_terminal_it_is_said_once_and_short(scripted: Scripted, monkeypatch) -> None:
    from chainform.cli import _output

    monkeypatch.setattr(_output, "stderr_is_terminal", lambda: True)
    result = run_probe(scripted)
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "Warning: the python tool runs with isolation auto, not every OS guard (-v says which)\n"
    )


def test_v_says_it_on_a_pipe_with_what_is_missing(scripted: Scripted) -> None:
    result = run_probe(scripted, "-v")
    assert result.exit_code == 0, result.output
    assert (
        result.stderr == "Warning: the python tool runs with isolation auto (missing: landlock: kernel 5.4)\n"
    )


def test_other_warnings_are_one_line_each(scripted: Scripted) -> None:
    code = "def probe() -> int:\n    import warnings\n    warnings.warn('chainform: something else')\n    return 1\n"
    scripted.script([tool_call("probe"), "done"])
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: (
            sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))
        )
        result = invoke("prompt", "probe it", "-m", "openai/gpt-4.1-mini", "--functions", code)
    assert result.stderr == "Warning: something else\n"
