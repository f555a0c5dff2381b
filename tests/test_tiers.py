"""The suite's own rules (tests/guards.py): a `unit` test that opens a socket or starts a process fails,
naming the guard, even where the code under test swallows the refusal; socketpair and asyncio stay
allowed; a test that leaves a process, a file or a thread behind is reported at the end of the run."""

from __future__ import annotations

import os
import re
import shutil
import signal
import threading
from pathlib import Path

import pytest

HERE = Path(__file__).parent

UNIT_TESTS = """
import asyncio, os, socket, subprocess, multiprocessing
import httpx
import pytest

pytestmark = pytest.mark.unit

def test_connect():
    with socket.socket() as sock:
        sock.connect(("127.0.0.1", 9))

def test_bind():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))

def test_swallowed():
    with socket.socket() as sock:
        try:
            sock.connect(("127.0.0.1", 9))
        except Exception:
            pass

def test_subprocess():
    subprocess.run(["true"])

def test_fork():
    os.fork()

def test_multiprocessing():
    multiprocessing.Process(target=print).start()

@pytest.fixture
def server():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))

def test_in_a_fixture(server):
    pass

def test_allowed():
    asyncio.run(asyncio.sleep(0))
    a, b = socket.socketpair()
    a.close()
    b.close()
    assert httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(204))).get("http://x/").status_code == 204
"""

LEAKY_TESTS = """
import os, subprocess, threading

kept = []

def test_process():
    kept.append(subprocess.Popen(["sleep", "60"]))

def test_file(tmp_path):
    kept.append(os.open(tmp_path / "x", os.O_WRONLY | os.O_CREAT))

def test_thread():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, args=(60,), daemon=True, name="leaky")
    thread.stop = stop  # for the outer test to end it
    thread.start()

def test_tidy(tmp_path):
    subprocess.run(["true"], check=True)
    with open(tmp_path / "y", "w") as fh:
        fh.write("closed")
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytest project with this suite's conftest and guards."""
    for name in ("conftest.py", "guards.py"):
        shutil.copy(HERE / name, pytester.path / name)
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\nmarkers =\n    unit: the unit tier\n"
    )
    return pytester


@pytest.mark.unit  # the inner sessions run in this process (pytester), each unit test under its own guard
def test_unit_tests_cannot_open_sockets_or_start_processes(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_units=UNIT_TESTS)
    result = suite.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=6, errors=1)
    for test, tried in [
        ("test_connect", "socket.connect"),
        ("test_bind", "socket.bind"),
        ("test_swallowed", "socket.connect"),
        ("test_subprocess", "subprocess.Popen"),
        ("test_fork", "os.fork"),
        ("test_multiprocessing", "multiprocessing"),
        ("test_in_a_fixture", "socket.bind"),
    ]:
        result.stdout.fnmatch_lines(
            [f"*test_units.py::{test} is marked `unit` but tried {tried}, refused by the unit-tier guard*"]
        )


def test_tests_without_the_mark_are_not_guarded(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_units=UNIT_TESTS.replace("pytestmark = pytest.mark.unit", ""))
    result = suite.runpytest_inprocess("-p", "no:cacheprovider", "-k", "bind or subprocess or fixture")
    result.assert_outcomes(passed=3)


def test_what_a_test_leaves_behind_is_reported(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_leaky=LEAKY_TESTS)
    result = suite.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*leaks: 3 tests left a process, file or thread behind*"])
    lines = result.stdout.lines
    leaks = lines[next(i for i, line in enumerate(lines) if "leaks:" in line) :]
    process = next(line for line in leaks if line.startswith("test_leaky.py::test_process: process "))
    os.kill(int(process.rsplit(" ", 1)[1]), signal.SIGKILL)
    file = next(line for line in leaks if line.startswith("test_leaky.py::test_file: fd "))
    assert re.fullmatch(r"test_leaky.py::test_file: fd \d+ -> .*/test_file0/x", file)
    os.close(int(file.split()[2]))
    assert "test_leaky.py::test_thread: thread 'leaky'" in leaks
    assert not any("test_tidy" in line for line in leaks)
    for thread in threading.enumerate():
        if thread.name == "leaky":
            thread.stop.set()  # type: ignore[attr-defined]
            thread.join()


@pytest.mark.unit
def test_long_modules_are_collected_first_each_in_its_own_order(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_a="def test_a1(): pass\ndef test_a2(): pass\n",
        test_b="import pytest\ndef test_b1(): pass\n@pytest.mark.integration\ndef test_b2(): pass\n",
        test_c="import pytest\npytestmark = pytest.mark.unit\ndef test_c1(): pass\n",
        test_d="def test_d1(): pass\n",
        test_e="import pytest\npytestmark = pytest.mark.xdist_group('g')\ndef test_e1(): pass\n",
    )
    result = suite.runpytest_inprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    ids = [line for line in result.stdout.lines if "::" in line]
    assert ids == [
        *("test_b.py::test_b1", "test_b.py::test_b2", "test_e.py::test_e1"),  # the integration test's module
        *(
            "test_a.py::test_a1",
            "test_a.py::test_a2",
            "test_d.py::test_d1",
            "test_c.py::test_c1",
        ),  # unit last
    ]


@pytest.mark.unit
def test_a_grouped_test_xdist_did_not_name_fails(suite: pytest.Pytester) -> None:
    """What a worker sees when xdist could not name a test's group (pytest 9.2, or a mark added too late)."""
    suite.makepyfile(
        as_a_worker="def pytest_configure(config):\n    config.option.loadgroup = True\n",
        test_grouped="import pytest\npytestmark = pytest.mark.xdist_group('g')\ndef test_one(): pass\n",
    )
    suite.syspathinsert()
    result = suite.runpytest_inprocess("-p", "no:cacheprovider", "-p", "as_a_worker")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*pytest-xdist did not put test_grouped.py::test_one in its xdist_group*"])


def test_a_thread_an_earlier_test_left_is_not_the_unit_tests_doing() -> None:
    import socket

    from guards import UnitGuard, UnitTierViolation

    def bind(results: list[str], go: threading.Event | None = None) -> None:
        if go is not None:
            go.wait(60)
        try:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
            results.append("bound")
        except UnitTierViolation:
            results.append("refused")

    go, elder, young, main = threading.Event(), [], [], []
    earlier = threading.Thread(target=bind, args=(elder, go), daemon=True)
    earlier.start()  # alive before the guard: an earlier test's thread
    guard = UnitGuard("test_x")
    guard.install()
    try:
        go.set()
        earlier.join(60)
        later = threading.Thread(target=bind, args=(young,))
        later.start()
        later.join(60)
        bind(main)
    finally:
        guard.uninstall()
    assert (elder, young, main) == (["bound"], ["refused"], ["refused"])
