"""The ``python`` tool: run a cell of Python in a fresh, resource-limited interpreter process.

What the sandbox does: a new ``python -I -S`` process (no access to the caller's memory, no
site-packages, no user site, ``PYTHON*`` variables ignored) in its own process group, started in an
empty temporary directory with a minimal environment, under ``setrlimit`` caps on CPU seconds,
address space, written file size, open files and core dumps; stdout+stderr are capped and the whole
group is killed at the wall-clock timeout. Everything is deleted afterwards.

What it does NOT do: it is not a security boundary. Code runs as the calling user, so it can read
any file that user can read, write outside the temporary directory, open network connections and
start processes (a process that calls ``setsid`` escapes the group kill). Run untrusted code in a
container or VM on top of this.
"""

from __future__ import annotations

import contextlib
import math
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from typing import Annotated, Any

from chainform.tools._schema import build_spec
from chainform.tools._tool import Tool

# Runs inside the child. Limits are set here rather than in a ``preexec_fn``, which is unsafe when
# the parent has threads (tools are run from worker threads).
_BOOTSTRAP = r"""
import sys
sys.stdout.reconfigure(encoding="utf-8", errors="backslashreplace")
def _chainform_cell():
    import ast, linecache, traceback
    path, cpu, mem, fsize = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    with open(path, encoding="utf-8") as f:
        src = f.read()
    linecache.cache["<cell>"] = (len(src), None, src.splitlines(True), "<cell>")
    try:
        import resource
        for kind, soft, hard in ((resource.RLIMIT_CPU, cpu, cpu + 1), (resource.RLIMIT_AS, mem, mem),
                                 (resource.RLIMIT_FSIZE, fsize, fsize), (resource.RLIMIT_CORE, 0, 0),
                                 (resource.RLIMIT_NOFILE, 256, 256)):
            try:
                resource.setrlimit(kind, (soft, hard))
            except (ValueError, OSError):
                pass
    except ImportError:
        pass
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        tree = ast.parse(src, "<cell>")
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, "<cell>", "exec"), ns)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns)
            if value is not None:
                print(repr(value))
    except SystemExit as exc:
        if exc.code not in (None, 0):
            print(f"SystemExit: {exc.code}")
    except BaseException as exc:
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != "<cell>":
            tb = tb.tb_next
        exc.__traceback__ = tb
        sys.stdout.flush()
        print("".join(traceback.format_exception(type(exc), exc, tb)), end="")
_chainform_cell()
"""


def _gone(pid: int, wait_s: float) -> bool:
    """Whether the child has exited, without reaping it (so its process group id stays ours)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.002)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def run_python(
    code: str,
    timeout: float = 5.0,
    *,
    memory_mb: int = 1024,
    max_output: int = 20_000,
    max_file_mb: int = 16,
    site_packages: bool = False,
) -> str:
    """Run ``code`` in a fresh interpreter; return the last expression's repr and/or what it printed,
    or the traceback. Always returns within about ``timeout`` seconds."""
    with tempfile.TemporaryDirectory(prefix="chainform-py-", ignore_cleanup_errors=True) as root:
        work = os.path.join(root, "work")
        os.mkdir(work)
        cell = os.path.join(root, "cell.py")
        with open(cell, "w", encoding="utf-8") as f:
            f.write(code)
        flags = ["-I", "-u"] if site_packages else ["-I", "-S", "-u"]
        limits = [str(math.ceil(timeout) + 1), str(memory_mb * 2**20), str(max_file_mb * 2**20)]
        env = {"PATH": os.defpath, "HOME": work, "TMPDIR": work, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        proc = subprocess.Popen(
            [sys.executable, *flags, "-c", _BOOTSTRAP, cell, *limits],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        chunks: list[bytes] = []
        size = 0
        note = ""
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    note = f"TimeoutError: the code ran longer than {timeout:g} s and was stopped"
                    break
                if not sel.select(remaining):
                    continue
                data = os.read(fd, 65536)
                if not data:
                    break
                chunks.append(data)
                size += len(data)
                if size > max_output:
                    note = f"[output truncated at {max_output} bytes; the code was stopped]"
                    break
        if not note:
            _gone(proc.pid, 1.0)
        _kill_group(proc.pid)
        proc.stdout.close()
        status = proc.wait()
    text = b"".join(chunks)[:max_output].decode("utf-8", errors="replace")
    if not note and status < 0:
        name = signal.Signals(-status).name
        why = {"SIGXCPU": " (CPU time limit)", "SIGKILL": " (killed, likely the memory limit)"}.get(name, "")
        note = f"[the process was ended by {name}{why}]"
    if note:
        text = f"{text}{'' if not text or text.endswith(chr(10)) else chr(10)}{note}"
    return text


_DESCRIPTION = (
    "Run Python 3 code in a fresh, isolated interpreter and return the value of the last expression "
    "(like a notebook cell) or else what the code printed; an error comes back as its traceback. "
    "Nothing is kept between calls. Standard library only. Limits: {timeout:g} s, {memory} MB of memory."
)


class PythonTool(Tool):
    """The ``python`` tool, with its limits. ``python(code)`` runs code directly; ``python.with_limits``
    makes a copy with other limits."""

    def __init__(
        self,
        *,
        timeout: float = 5.0,
        memory_mb: int = 1024,
        max_output: int = 20_000,
        site_packages: bool = False,
    ) -> None:
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.max_output = max_output
        self.site_packages = site_packages

        def python(code: Annotated[str, "Python source code to run"]) -> str:
            return self(code)

        super().__init__(
            build_spec(python),
            name="python",
            description=_DESCRIPTION.format(timeout=timeout, memory=memory_mb),
        )

    def with_limits(self, **limits: Any) -> PythonTool:
        """A copy with some limits changed (``timeout``, ``memory_mb``, ``max_output``, ``site_packages``)."""
        current = {
            "timeout": self.timeout,
            "memory_mb": self.memory_mb,
            "max_output": self.max_output,
            "site_packages": self.site_packages,
        }
        return PythonTool(**{**current, **limits})

    def __call__(self, code: str, timeout: float | None = None, **limits: Any) -> str:  # type: ignore[override]
        """Run ``code`` now (not validated as model arguments); see `run_python`."""
        return run_python(
            code,
            self.timeout if timeout is None else timeout,
            memory_mb=limits.get("memory_mb", self.memory_mb),
            max_output=limits.get("max_output", self.max_output),
            site_packages=limits.get("site_packages", self.site_packages),
        )


python = PythonTool()
