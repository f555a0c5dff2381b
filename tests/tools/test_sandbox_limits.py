"""How the sandbox bounds a cell's total memory and unix sockets, and says which guard holds:
the cgroup v2 decision, the divided budget, and "strict" refusing when a guard it promises is
missing. The probes themselves (a socket, the disk cap, processes together) are in
test_sandbox_probes.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from chainform.errors import SandboxUnavailableError
from chainform.tools import python
from chainform.tools._sandbox import _cgroup, _run

linux = pytest.mark.skipif(sys.platform != "linux", reason="Linux guards")


@pytest.fixture
def no_cgroup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cgroup, "memory_base", lambda: ("", "no cgroup here (test)"))


@linux
def test_without_a_cgroup_the_budget_is_divided_over_the_process_cap(no_cgroup: None) -> None:
    plan = _run.memory_plan(1024, "strict")
    assert (plan.address_space, plan.processes, plan.cgroup) == (256 * 2**20, 4, "")
    assert "1024 MB divided over at most 4 processes or threads of 256 MB each" in plan.split_note
    small = _run.memory_plan(100, "auto")
    assert (small.address_space, small.processes) == (100 * 2**20, 1)
    assert _run.memory_plan(1024, "process") == _run.MemoryPlan(2**30, 0)


@linux
def test_the_divided_budget_is_said_in_the_result_and_a_warning(no_cgroup: None) -> None:
    _run._warned.clear()
    with pytest.warns(RuntimeWarning, match="divided over at most 4 processes"):
        out = python("import resource; resource.getrlimit(resource.RLIMIT_AS)[0] >> 20", isolation="auto")
    if out.guards.isolation != "strict":
        pytest.skip(f"this kernel lacks sandbox guards: {out.guards.missing}")
    assert out == "256\n"
    assert "memory-split" in out.guards.active and "no cgroup here (test)" in out.guards.notes["memory-split"]
    assert "divided over at most 4" in out.guards.describe()


@linux
def test_strict_refuses_without_the_seccomp_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_run, "unix_socket_filter", lambda: (b"", "libseccomp is not available (test)"))
    with pytest.raises(SandboxUnavailableError, match=r"seccomp-unix \(libseccomp is not available"):
        python("1", isolation="strict")
    _run._warned.clear()
    with pytest.warns(RuntimeWarning, match="seccomp-unix"):
        out = python("6 * 7", isolation="auto")
    assert out == "42\n" and out.guards.isolation == "partial"
    assert "seccomp-unix" not in out.guards.active


def _fake_hierarchy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, procs: str) -> Path:
    """A cgroup v2 tree of plain files: chainform's cgroup /app with the memory controller."""
    own = tmp_path / "cg" / "app"
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text("cpu memory pids\n")
    (own / "cgroup.subtree_control").write_text("\n")
    (own / "cgroup.procs").write_text(procs)
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(f"30 25 0:26 / {tmp_path / 'cg'} rw,nosuid - cgroup2 cgroup2 rw\n")
    (tmp_path / "cgroup").write_text("0::/app\n")
    monkeypatch.setattr(_cgroup, "_MOUNTINFO", str(mountinfo))
    monkeypatch.setattr(_cgroup, "_OWN", str(tmp_path / "cgroup"))
    _cgroup.memory_base.cache_clear()
    monkeypatch.setattr(_cgroup, "_write", _fake_write)
    return own


def _fake_write(path: str, text: str) -> None:
    """cgroupfs appends a written pid or controller; a plain file is overwritten."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(text + "\n")


def test_a_delegated_cgroup_chainform_is_alone_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = _fake_hierarchy(tmp_path, monkeypatch, f"{os.getpid()}\n")
    try:
        assert _cgroup.memory_base() == (str(own), "")
    finally:
        _cgroup.memory_base.cache_clear()
    assert (own / "chainform" / "cgroup.procs").read_text() == f"{os.getpid()}\n"  # moved to a leaf
    assert "+memory" in (own / "cgroup.subtree_control").read_text()
    cell = _cgroup.make_cell(str(own), 512 * 2**20)
    assert Path(cell, "memory.max").read_text() == f"{512 * 2**20}\n"


def test_a_cgroup_shared_with_other_processes_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = _fake_hierarchy(tmp_path, monkeypatch, f"{os.getpid()}\n1\n")
    try:
        base, why = _cgroup.memory_base()
    finally:
        _cgroup.memory_base.cache_clear()
    assert base == "" and "holds other processes" in why and "Delegate=yes" in why
    assert not (own / "chainform").exists()
    (own / "cgroup.controllers").write_text("cpu pids\n")
    _cgroup.memory_base.cache_clear()
    try:
        assert "memory controller is not delegated" in _cgroup.memory_base()[1]
    finally:
        _cgroup.memory_base.cache_clear()
