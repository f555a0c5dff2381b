"""Fixtures every test shares: an isolated CHAINFORM_HOME (always) and a running provider emulator."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chainform.testing.emulator import Emulator, RecordedRequest
from guards import Leaks, UnitGuard
from virtual_time import SkewedTime, VirtualTime

pytest_plugins = ("pytester",)  # tests/test_tiers.py runs small suites under this conftest

GUARDS = pytest.StashKey[UnitGuard]()
LEAKS = pytest.StashKey[Leaks]()
LOST_GROUP = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Let the Ctrl-C tests' child processes see SIGINT.

    A non-interactive shell starts a background job (`.ci/run &`, `nohup ... &`) with SIGINT ignored,
    and an ignored signal stays ignored across exec: the children would never be interrupted. A
    handled signal is reset to its default at exec, so the children get Python's usual Ctrl-C.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    config.stash[LEAKS] = Leaks()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Start what chainform keeps for the whole process before the first test, so the leak report
    does not charge it to that test: the sync API's event loop and its first worker thread."""
    import chainform as cf
    from chainform.testing import ScriptedClient, tool_call

    def ping() -> str:
        """A sync tool: runs on the loop's worker thread."""
        return "pong"

    model = cf.Model(ScriptedClient([tool_call("ping"), "ok"]))
    model.chain("warm up", tools=[ping], log=False).text()


# Modules whose tests take longest (CI prints `--durations`), besides the `integration` and `xdist_group` ones.
HEAVY_MODULES = frozenset(
    {
        "docs/test_examples.py",
        "map/test_map_memory.py",
        "map/test_map_batch.py",
        "map/test_map_batch_faults.py",
        "chain/test_fuzz_replies.py",
        "evals/test_eval_kill.py",
        "documents/test_convert.py",
    }
)
TESTS = Path(__file__).parent


def cost_rank(item: pytest.Item) -> int:
    """0: a long test (the embedded model, Ray, a known heavy module); 2: the unit tier; 1: the rest."""
    if item.get_closest_marker("integration") or item.get_closest_marker("xdist_group"):
        return 0
    if item.path.is_relative_to(TESTS) and item.path.relative_to(TESTS).as_posix() in HEAVY_MODULES:
        return 0
    return 2 if item.get_closest_marker("unit") else 1


@pytest.hookimpl(trylast=True)  # after the folders' own hooks have put tests in their xdist groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest first: each module moves as a whole to the rank of its longest test (the order inside a module
    is kept), so under `--dist loadgroup` (which hands out the groups, then single tests, in this order to
    whichever worker is free) a long test never starts last and becomes the run's critical path.

    On an xdist worker under `--dist loadgroup`, a test of an `xdist_group` whose id lacks `@GROUP` (where
    xdist names its group) fails: its group would be spread over the workers, each making its fixtures."""
    if getattr(config.option, "loadgroup", False):
        for item in items:
            if item.get_closest_marker("xdist_group") and "@" not in item.nodeid:
                item.stash[LOST_GROUP] = (
                    f"pytest-xdist did not put {item.nodeid} in its xdist_group: a hook added the mark after "
                    f"xdist read it (give that hook tryfirst=True), or this pytest ({pytest.__version__}) "
                    "and pytest-xdist do not work together (pyproject.toml)"
                )
    rank: dict[Path, int] = {}
    for item in items:
        rank[item.path] = min(rank.get(item.path, 2), cost_rank(item))
    items.sort(key=lambda item: rank[item.path])  # stable: same-rank modules keep their collection order


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """A `unit` test runs under `UnitGuard` from its first fixture to its last teardown."""
    item.config.stash[LEAKS].before()
    if item.get_closest_marker("unit") is not None:
        guard = item.stash[GUARDS] = UnitGuard(item.nodeid)
        guard.install()
    yield
    if LOST_GROUP in item.stash:
        pytest.fail(item.stash[LOST_GROUP], pytrace=False)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    finally:
        if GUARDS in item.stash:
            item.stash[GUARDS].uninstall()
        item.config.stash[LEAKS].after(item.nodeid)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Iterator[pytest.TestReport]:
    """A unit test that tried a socket or a process fails, even where the code under test caught the refusal."""
    report: pytest.TestReport = yield
    guard = item.stash.get(GUARDS, None)
    if guard is not None and guard.tried:
        if report.passed:
            report.outcome = "failed"
            report.longrepr = guard.message()
        guard.tried.clear()  # reported once, in the phase that tried
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The leak report of this process (a worker's travels to the controller in its `workeroutput`)."""
    lines = session.config.stash[LEAKS].report()
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["leaks"] = lines
    else:
        session.config.stash[LEAKS].lines.extend(lines)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist: a worker is done; keep its leak report for the summary."""
    node.config.stash[LEAKS].lines.extend(getattr(node, "workeroutput", {}).get("leaks", []))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    lines = config.stash[LEAKS].lines
    if lines:
        terminalreporter.section(f"leaks: {len(lines)} tests left a process, file or thread behind")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh CHAINFORM_HOME per test: the log, keys and schemas never touch the user's own.

    Also unsets the variables that would pick a model or turn on tracebacks behind a test's back.
    """
    path = tmp_path / "home"
    monkeypatch.setenv("CHAINFORM_HOME", str(path))
    for var in ("CHAINFORM_MODEL", "CHAINFORM_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    return path


@pytest.fixture(scope="session")
def cli_bin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder holding a `chainform` that runs each command in one warm, forking CLI server
    (tests/cli_server.py): for tests that run many shell lines as written. Stopped after the session."""
    from cli_server import cli_server

    with cli_server(tmp_path_factory.mktemp("cli")) as folder:
        yield folder


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    """The loopback provider emulator (every wire format), stopped after the test."""
    with Emulator() as server:
        yield server


class HeldRows:
    """An emulator answer (`emulator.default`) that holds each request for row `first` or later
    (`row_of` reads a request's row) until `release()`: a test stops a run at a known point, with
    the run stuck on its held requests, however slow the machine is."""

    def __init__(
        self, answer: Callable[[RecordedRequest], str], row_of: Callable[[RecordedRequest], int], first: int
    ) -> None:
        self.answer, self.row_of, self.first = answer, row_of, first
        self.held: list[int] = []
        self._released = threading.Event()

    def __call__(self, request: RecordedRequest) -> str:
        row = self.row_of(request)
        if row >= self.first and not self._released.is_set():
            self.held.append(row)
            self._released.wait(300)
        return self.answer(request)

    def wait(self, proc: subprocess.Popen[str], held: int, ready: Callable[[], bool]) -> None:
        """Until `held` requests are held and `ready()`, while `proc` runs (at most 300 s)."""
        deadline = time.monotonic() + 300
        while len(self.held) < held or not ready():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"{len(self.held)} of {held} requests held"
            time.sleep(0.02)

    def release(self) -> None:
        """Answer the held requests and every one after."""
        self._released.set()


@pytest.fixture
def held_rows(emulator: Emulator) -> Iterator[Callable[..., HeldRows]]:
    """Makes `HeldRows`; each is released when the test ends (before the emulator stops)."""
    made: list[HeldRows] = []

    def make(
        answer: Callable[[RecordedRequest], str], row_of: Callable[[RecordedRequest], int], first: int
    ) -> HeldRows:
        made.append(HeldRows(answer, row_of, first))
        return made[-1]

    yield make
    for gate in made:
        gate.release()


@pytest.fixture
def damaged_log(home: Path) -> Path:
    """`home`'s logs.db holding 100 two-call chains, its middle page then overwritten (a bad sector)."""
    import sqlite3

    from chainform.store import CallRecord, Store, new_id
    from chainform.types import Message

    path = home / "logs.db"
    with Store(path) as store:
        ids = [new_id() for _ in range(100)]
        store.write_calls(
            [
                CallRecord(
                    conversation_id=cid,
                    chain_id=cid,
                    seq=seq,
                    purpose="chain",
                    model="scripted",
                    prompt="q",
                    messages=[Message.user("q")],
                    text=f"answer {cid} " * 20,
                )
                for cid in ids
                for seq in (0, 1)
            ]
        )
    with sqlite3.connect(path) as db:
        page_size, pages = (db.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_size", "page_count"))
    with open(path, "r+b") as fh:
        fh.seek(pages // 2 * page_size)
        fh.write(b"\xff" * 64)
    return path


@pytest.fixture
def virtual() -> Iterator[VirtualTime]:
    """A `VirtualTime` loop (virtual_time.py) to run a test's coroutine on (`virtual.run(...)`): what
    reads the running loop's clock (the idle clock, the map's rate gate and back-offs, asyncio's
    sleeps and timeouts) does so in virtual seconds, and no real second is waited. Closed after."""
    with VirtualTime() as loop:
        yield loop


@pytest.fixture
def skewed() -> Iterator[SkewedTime]:
    """A `SkewedTime` loop (virtual_time.py): real time that the test moves on at each of the
    emulator's stalls (`with skewed.moving_on(emulator, seconds): skewed.run(...)`). Closed after."""
    with SkewedTime() as loop:
        yield loop
