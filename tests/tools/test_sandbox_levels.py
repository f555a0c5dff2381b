"""Isolation levels: what each result says it ran under, how "auto" degrades and "strict" refuses,
and bad input that must come back as a clear error instead of an exception from deep inside."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys

import pytest

from chainform.errors import SandboxUnavailableError, ToolArgumentError
from chainform.tools import PythonTool, python
from chainform.tools._python import MAX_CODE_CHARS

linux = pytest.mark.skipif(sys.platform != "linux", reason="Linux guards")


def test_process_level_reports_itself() -> None:
    out = python("6 * 7", isolation="process")
    assert out == "42\n"
    assert out.metadata == {"isolation": "process", "guards": ["rlimits"], "missing": {}, "notes": {}}


@linux
def test_auto_reports_every_guard_it_got() -> None:
    out = python("6 * 7")
    assert out == "42\n"
    guards = out.guards
    assert guards.isolation in ("strict", "partial", "process")
    assert "rlimits" in guards.active
    if guards.isolation == "strict":
        for name in ("user-ns", "pid-ns", "net-ns", "mount-ns", "landlock-fs", "no-new-privs"):
            assert name in guards.active
        assert guards.missing == {}


def test_environment_is_allow_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "AZURE_OPENAI_API_KEY"):
        monkeypatch.setenv(name, "cf-planted-env-value")
    for level in ("auto", "process"):
        out = python("import os; sorted(os.environ.items())", isolation=level)
        assert "cf-planted" not in out
        env = dict(eval(out))
        assert set(env) <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ"}
        assert env["HOME"] == env["TMPDIR"] and "chainform-py-" in env["HOME"]


_NO_USERNS = (
    'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" -c '
    "'import sys; from chainform.tools import python\n"
    "try:\n"
    "    out = python(sys.argv[2], isolation=sys.argv[1])\n"
    "    print(repr(str(out)), out.metadata)\n"
    "except Exception as exc:\n"
    '    print(type(exc).__name__, exc)\' "$1" "$2"'
)


def _without_user_namespaces(level: str, code: str = "2 ** 20") -> str:
    """Run a cell where the kernel refuses new user namespaces (a limit of 0 set in an outer one)."""
    done = subprocess.run(
        ["unshare", "-U", "-r", "sh", "-c", _NO_USERNS, sys.executable, level, code],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


needs_unshare = pytest.mark.skipif(
    sys.platform != "linux" or shutil.which("unshare") is None, reason="needs util-linux unshare"
)


@needs_unshare
def test_auto_degrades_and_says_what_is_missing() -> None:
    out = _without_user_namespaces("auto")
    assert out.startswith("'1048576\\n'"), out
    assert "'isolation': 'partial'" in out and "'user-ns': 'unprivileged user namespaces" in out
    assert "landlock-fs" in out  # what the kernel still offers is used
    assert "RuntimeWarning: chainform: the python tool runs with isolation partial (missing: " in out
    assert "user-ns: unprivileged user namespaces unavailable" in out


@needs_unshare
def test_without_a_process_cap_the_memory_budget_is_not_divided() -> None:
    """The divided budget needs the process cap (a user namespace); without it a process keeps
    the whole budget, and the result says total memory is not bounded."""
    out = _without_user_namespaces("auto", "import resource\nresource.getrlimit(resource.RLIMIT_AS)[0] >> 20")
    assert out.startswith("'1024\\n'"), out
    assert "'memory-total': " in out and "no process limit to divide the budget over" in out
    assert "seccomp-unix" in out  # needs only no-new-privs, which holds


@needs_unshare
def test_strict_refuses_without_every_guard() -> None:
    out = _without_user_namespaces("strict")
    assert out.startswith("SandboxUnavailableError isolation='strict' refused"), out
    assert "user-ns" in out and "1048576" not in out


def test_strict_error_is_a_typed_tool_error() -> None:
    assert issubclass(SandboxUnavailableError, Exception)
    from chainform.errors import ToolError

    assert issubclass(SandboxUnavailableError, ToolError)


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("print('\ud800')", "lone surrogate"),
        ("x = 1\x00", "NUL"),
        ("#" * (MAX_CODE_CHARS + 1), "more than the limit"),
        (b"1 + 1", "expected a string"),
    ],
)
def test_bad_code_is_a_tool_error(code: object, why: str) -> None:
    with pytest.raises(ToolArgumentError, match=why):
        python(code)  # type: ignore[arg-type]
    from chainform.chain._tools import run_call
    from chainform.types import FunctionCallContent

    if isinstance(code, str):  # through a chain it is an error result the model can read
        import asyncio

        result = asyncio.run(
            run_call(
                FunctionCallContent("c1", "python", {"code": code}),
                {"python": python},
                before_call=None,
                after_call=None,
                restore_arguments=lambda tool, args: args,
            )
        )
        assert result.error is not None and why in result.error


@pytest.mark.parametrize("value", [math.inf, math.nan, -1, 0, "5", True, None])
def test_limits_must_be_finite_positive_numbers(value: object) -> None:
    for name in ("timeout", "memory_mb"):
        with pytest.raises(ValueError, match=name):
            PythonTool(**{name: value})  # type: ignore[arg-type]
    if value is not None:  # a call's timeout=None means the tool's own
        with pytest.raises(ValueError, match="timeout"):
            python("1", timeout=value)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="memory_mb"):
        python.with_limits(memory_mb=value)


def test_isolation_must_be_a_known_level() -> None:
    with pytest.raises(ValueError, match="isolation must be one of auto, strict, process"):
        PythonTool(isolation="sandbox")  # type: ignore[arg-type]
    tool = python.with_limits(isolation="process")
    assert (tool.isolation, python.isolation) == ("process", "auto")
    assert "no network" not in tool.description and "no network" in python.description


@linux
def test_cell_can_still_use_the_interpreter_and_its_temporary_directory() -> None:
    code = (
        "import subprocess, sys, tempfile, pathlib\n"
        "p = pathlib.Path(tempfile.mkdtemp()) / 'x.txt'\n"
        "p.write_text('ok')\n"
        "out = subprocess.run([sys.executable, '-c', 'print(6 * 7)'], capture_output=True, text=True)\n"
        "(p.read_text(), out.stdout.strip())"
    )
    assert python(code) == "('ok', '42')\n"


@linux
def test_cell_cannot_reach_the_sandbox_init_or_spoof_its_report() -> None:
    spoof = "import os\nfor fd in os.listdir('/proc/1/fd'):\n    os.open(f'/proc/1/fd/{fd}', os.O_WRONLY)"
    out = python(spoof)
    if out.guards.isolation != "strict":
        pytest.skip("this kernel lacks a sandbox guard")
    assert "PermissionError" in out
    assert "got=" not in "".join(out.guards.active)
    assert python("import os; os.getpid(), os.getppid()") == "(2, 1)\n"


def test_macos_profile_states_the_same_intent(monkeypatch: pytest.MonkeyPatch) -> None:
    from chainform.tools._sandbox import _seatbelt

    monkeypatch.setattr(_seatbelt, "available", lambda: "/usr/bin/sandbox-exec")
    argv = _seatbelt.wrap(["python3", "-I", "child.py"], "/private/tmp/chainform-py-x")
    assert argv[0] == "/usr/bin/sandbox-exec" and argv[-3:] == ["python3", "-I", "child.py"]
    assert "ROOT=/private/tmp/chainform-py-x" in argv
    profile = argv[argv.index("-p") + 1]
    for rule in ("(deny network*)", "(deny file-write*)", '(deny file-read* (subpath (param "HOME")))',
                 "(allow signal (target same-sandbox))"):  # fmt: skip
        assert rule in profile
