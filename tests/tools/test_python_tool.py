"""The python tool: results like a notebook cell, and limits that are tested, not assumed."""

import os
import uuid

import pytest

from chainform.errors import ToolArgumentError
from chainform.tools import PythonTool, Tool, python
from processes import running

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the sandbox limits are POSIX")


def test_is_a_ready_tool() -> None:
    assert isinstance(python, Tool)
    assert python.name == "python"
    assert python.parameters["required"] == ["code"]
    assert "last expression" in python.description
    assert python.invoke({"code": "6 * 7"}) == "42\n"
    with pytest.raises(ToolArgumentError, match="code"):
        python.invoke({"source": "1"})


def test_last_expression_and_prints() -> None:
    assert python("1 + 1") == "2\n"
    assert python("x = 3\nprint('hi')\nx * 2") == "hi\n6\n"
    assert python("x = 3") == ""
    assert python("print('only printed')\nNone") == "only printed\n"
    assert python("'text'") == "'text'\n"
    assert python("import sys; print('err', file=sys.stderr)") == "err\n"
    assert python("for i in range(2):\n    print(i)") == "0\n1\n"


def test_exceptions_come_back_as_tracebacks() -> None:
    out = python("def f():\n    return 1 / 0\nf()")
    assert out.startswith("Traceback (most recent call last):")
    assert 'File "<cell>", line 2, in f' in out
    assert "return 1 / 0" in out
    assert out.rstrip().endswith("ZeroDivisionError: division by zero")
    assert "chainform" not in out
    assert "SyntaxError" in python("def (:")
    assert python("import sys; sys.exit(2)") == "SystemExit: 2\n"


def test_timeout_stops_an_infinite_loop() -> None:
    # 3 s: the sandbox starts in ~0.05 s, so only a machine that stalls the cell for seconds before
    # its first line could leave "started" unprinted
    out = python("print('started')\nwhile True:\n    pass", timeout=3)
    assert out.startswith("started\n")
    assert "TimeoutError" in out


def test_timeout_kills_sleeping_children_too() -> None:
    # The child never ends by itself: unless the timeout kills it, the call hangs or it is still there.
    marker = f"chainform-test-child-{uuid.uuid4().hex}"
    child = f"import time  # {marker}\nwhile True: time.sleep(1)"
    code = (
        f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {child!r}])\n"
        "print('spawned')\ntime.sleep(600)"
    )
    out = python(code, timeout=3)
    assert out.startswith("spawned\n"), out  # the child was there to be killed (3 s: ample to get here)
    assert "TimeoutError" in out
    assert running(marker) == []  # killed: gone, or dying with SIGKILL pending


def test_memory_cap() -> None:
    out = python("x = bytearray(2 * 1024 ** 3)\nlen(x)", timeout=60)
    assert "MemoryError" in out  # the cap stopped it, not the timeout
    assert python("len(bytearray(50 * 1024 ** 2))") == f"{50 * 1024**2}\n"


def test_output_cap() -> None:
    tool = python.with_limits(max_output=1000)
    out = tool("while True:\n    print('x' * 100)")
    assert len(out) < 1200
    assert "truncated" in out and "the code was stopped" in out
    assert "TimeoutError" not in out  # the cap stopped the endless printing, not the timeout


def test_isolation_from_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAINFORM_TEST_SECRET", "s3cret")
    secret = "caller-secret"  # noqa: F841
    assert "NameError" in python("secret")
    assert "NameError" in python("python")
    assert "ModuleNotFoundError" in python("import chainform")
    cwd = python("import os; os.getcwd()").strip().strip("'")
    assert cwd != os.getcwd()
    assert os.path.basename(os.path.dirname(cwd)).startswith("chainform-py-")
    assert not os.path.exists(cwd), "the temporary directory is removed afterwards"
    assert python("import os; os.listdir('.')") == "[]\n"
    env = python("import os; sorted(os.environ)")
    assert "PYTHONPATH" not in env and "VIRTUAL_ENV" not in env
    assert python("import os; os.environ.get('CHAINFORM_TEST_SECRET')") == ""


def test_state_does_not_persist_between_calls() -> None:
    python("open('f.txt', 'w').write('x')\nx = 1")
    assert "NameError" in python("x")
    assert python("import os; os.path.exists('f.txt')") == "False\n"


def test_file_size_limit() -> None:
    out = python("open('big', 'wb').write(b'x' * (64 * 1024 ** 2))")
    assert "OSError: [Errno 27] File too large" in out


def test_with_limits_and_description() -> None:
    tool = python.with_limits(timeout=2, memory_mb=256)
    assert isinstance(tool, PythonTool)
    assert (tool.timeout, tool.memory_mb, python.timeout) == (2, 256, 5.0)
    assert "2 s" in tool.description and "256 MB" in tool.description
    assert "MemoryError" in tool("bytearray(300 * 1024 ** 2)")


@pytest.mark.parametrize("isolation", ["process", "auto"])
def test_a_cell_that_closes_its_output_is_still_bound_by_the_timeout(isolation: str) -> None:
    # End of output is not the end of the cell: one that closes its own stdout and stderr runs on
    # until the timeout stops it, and the note says so (not a kill blamed on the memory limit).
    code = "import os, time\nprint('closing', flush=True)\nos.close(1)\nos.close(2)\ntime.sleep(600)"
    out = python.with_limits(isolation=isolation)(code, timeout=3)
    assert out.startswith("closing\n"), out
    assert "TimeoutError: the code ran longer than 3 s" in out, out
    assert "memory limit" not in out
