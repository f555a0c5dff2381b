"""The python tool: results like a notebook cell, and limits that are tested, not assumed."""

import os
import time

import pytest

from chainform.errors import ToolArgumentError
from chainform.tools import PythonTool, Tool, python

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
    start = time.monotonic()
    out = python("print('started')\nwhile True:\n    pass", timeout=1)
    elapsed = time.monotonic() - start
    assert elapsed < 2.0, elapsed
    assert out.startswith("started\n")
    assert "TimeoutError" in out


def test_timeout_kills_sleeping_children_too() -> None:
    start = time.monotonic()
    code = "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\nimport time; time.sleep(60)"
    out = python(code, timeout=1)
    assert time.monotonic() - start < 2.0
    assert "TimeoutError" in out


def test_memory_cap() -> None:
    start = time.monotonic()
    out = python("x = bytearray(2 * 1024 ** 3)\nlen(x)", timeout=5)
    assert "MemoryError" in out
    assert time.monotonic() - start < 5
    assert python("len(bytearray(50 * 1024 ** 2))") == f"{50 * 1024**2}\n"


def test_output_cap() -> None:
    tool = python.with_limits(max_output=1000)
    start = time.monotonic()
    out = tool("while True:\n    print('x' * 100)")
    assert time.monotonic() - start < 3
    assert len(out) < 1200
    assert "truncated" in out


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
