"""The ``python`` tool: run a cell of model-written Python in a fresh, confined interpreter.

Each call starts ``python -I -S`` (no site-packages, ``PYTHON*`` variables ignored) in an empty
temporary directory with an allow-listed environment, under resource limits, and confines it with
the operating system according to ``isolation`` (see `chainform.tools._sandbox`): on Linux new
namespaces (no network, no view of other processes, every descendant killed with the cell, a
private /tmp and /run), Landlock (read-only interpreter and system libraries, read-write only the
temporary directory, itself a tmpfs of ``disk_mb``), a seccomp filter (no unix sockets), no
capabilities, a bounded number of processes and ``memory_mb`` for all of them together. Output is capped, the wall clock is enforced, and
everything is deleted afterwards. docs/tools.md says what each level blocks.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from chainform.errors import ToolArgumentError
from chainform.tools._sandbox import ISOLATION_LEVELS, CellOutput, Isolation, run_cell
from chainform.tools._schema import build_spec
from chainform.tools._tool import Tool

MAX_CODE_CHARS = 1_000_000
DISK_MB = 64  # the cell's writable space: a tmpfs of this size on Linux


def _positive(name: str, value: Any, *, integer: bool = False) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    if not ok or (integer and not isinstance(value, int)):
        kind = "a positive integer" if integer else "a finite positive number"
        raise ValueError(f"{name} must be {kind}, got {value!r}")


def check_limits(
    timeout: Any,
    memory_mb: Any,
    max_output: Any,
    isolation: Any,
    site_packages: Any = False,
    disk_mb: Any = DISK_MB,
) -> None:
    """Raise ``ValueError`` for limits the sandbox cannot honour (``nan``, ``inf``, zero, a typo)."""
    _positive("timeout", timeout)
    _positive("memory_mb", memory_mb)
    _positive("max_output", max_output, integer=True)
    _positive("disk_mb", disk_mb, integer=True)
    if isolation not in ISOLATION_LEVELS:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION_LEVELS)}; got {isolation!r}")
    if not isinstance(site_packages, bool):
        raise ValueError(f"site_packages must be True or False, got {site_packages!r}")


def _check_code(code: Any) -> str:
    """The code as it can be written to a UTF-8 file, or a `ToolArgumentError` saying why not."""
    if not isinstance(code, str):
        raise ToolArgumentError("python", [f"code: expected a string, got {type(code).__name__}"])
    if len(code) > MAX_CODE_CHARS:
        raise ToolArgumentError(
            "python", [f"code: {len(code):,} characters, more than the limit of {MAX_CODE_CHARS:,}"]
        )
    if "\x00" in code:
        raise ToolArgumentError("python", [f"code: contains a NUL character at index {code.index(chr(0))}"])
    try:
        code.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolArgumentError(
            "python",
            [f"code: not encodable as UTF-8 (lone surrogate {code[exc.start]!r} at index {exc.start})"],
        ) from None
    return code


def run_python(
    code: str,
    timeout: float = 5.0,
    *,
    memory_mb: float = 1024,
    max_output: int = 20_000,
    max_file_mb: int = 16,
    disk_mb: int = DISK_MB,
    site_packages: bool = False,
    isolation: Isolation = "auto",
) -> CellOutput:
    """Run ``code`` in a fresh confined interpreter; return the last expression's repr and/or what it
    printed, or the traceback. Always returns within about ``timeout`` seconds. Bad code (not text,
    NUL, unencodable, too long) raises `ToolArgumentError`; bad limits raise ``ValueError``."""
    check_limits(timeout, memory_mb, max_output, isolation, site_packages, disk_mb)
    return run_cell(
        _check_code(code),
        timeout=timeout,
        memory_mb=memory_mb,
        max_output=max_output,
        max_file_mb=max_file_mb,
        disk_mb=disk_mb,
        site_packages=site_packages,
        isolation=isolation,
    )


_DESCRIPTION = (
    "Run Python 3 code in a fresh, isolated interpreter and return the value of the last expression "
    "(like a notebook cell) or else what the code printed; an error comes back as its traceback. "
    "Nothing is kept between calls. Standard library only{network}. "
    "Limits: {timeout:g} s, {memory:g} MB of memory, {disk} MB of files."
)


class PythonTool(Tool):
    """The ``python`` tool, with its limits. ``python(code)`` runs code directly; ``python.with_limits``
    makes a copy with other limits or another ``isolation`` ("auto", "strict", "process")."""

    def __init__(
        self,
        *,
        timeout: float = 5.0,
        memory_mb: float = 1024,
        max_output: int = 20_000,
        site_packages: bool = False,
        isolation: Isolation = "auto",
        disk_mb: int = DISK_MB,
    ) -> None:
        check_limits(timeout, memory_mb, max_output, isolation, site_packages, disk_mb)
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.max_output = max_output
        self.disk_mb = disk_mb
        self.site_packages = site_packages
        self.isolation: Isolation = isolation

        def python(code: Annotated[str, "Python source code to run"]) -> str:
            return self(code)

        super().__init__(
            build_spec(python),
            name="python",
            description=_DESCRIPTION.format(
                timeout=timeout,
                memory=memory_mb,
                disk=disk_mb,
                network="" if isolation == "process" else ", no network",
            ),
        )

    def with_limits(self, **limits: Any) -> PythonTool:
        """A copy with some limits changed (``timeout``, ``memory_mb``, ``disk_mb``, ``max_output``,
        ``site_packages``, ``isolation``)."""
        current = {
            "timeout": self.timeout,
            "memory_mb": self.memory_mb,
            "disk_mb": self.disk_mb,
            "max_output": self.max_output,
            "site_packages": self.site_packages,
            "isolation": self.isolation,
        }
        return PythonTool(**{**current, **limits})

    def __call__(self, code: str, timeout: float | None = None, **limits: Any) -> CellOutput:  # type: ignore[override]
        """Run ``code`` now (not validated as model arguments); see `run_python`."""
        return run_python(
            code,
            self.timeout if timeout is None else timeout,
            memory_mb=limits.get("memory_mb", self.memory_mb),
            max_output=limits.get("max_output", self.max_output),
            disk_mb=limits.get("disk_mb", self.disk_mb),
            site_packages=limits.get("site_packages", self.site_packages),
            isolation=limits.get("isolation", self.isolation),
        )

    def isolation_in_force(self) -> str:
        """The level this machine gives, found by running an empty cell: "strict", "partial"
        (with what is missing) or "process"."""
        isolation: Isolation = "auto" if self.isolation == "strict" else self.isolation
        return run_python("", 5.0, isolation=isolation, site_packages=self.site_packages).guards.describe()


python = PythonTool()
