"""One writer per map run (issue 38 item 2): a second process on the same run or the same OUT gets
one `Error:` line and exit 2 before it reads, rewrites or sends anything; the first one's rows are
each written once."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from map_helpers import (
    answer_text,
    assert_exactly_once,
    map_argv,
    order_number,
    read_lines,
    start_cli,
    write_orders,
)

from chainform.testing.emulator import Emulator, RecordedRequest


def wait_until(check: Any, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not check():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the first run never got there"
        time.sleep(0.02)


def second(argv: list[str]) -> subprocess.CompletedProcess[str]:
    proc = start_cli(argv)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the second writer ran on: {err}") from None
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def test_a_second_resume_of_a_live_run_is_refused_and_no_row_is_written_twice(
    tmp_path: Path, emulator: Emulator
) -> None:
    gate = threading.Event()

    def held(request: RecordedRequest) -> Any:
        if order_number(request) >= 3:  # rows 3.. wait: the first run is mid-way
            gate.wait(90)
        return answer_text(request)

    emulator.default = held
    inp, out = write_orders(tmp_path / "in.jsonl", 10), tmp_path / "out.jsonl"
    argv = map_argv(inp, out, emulator.base_url, None, "--concurrency", "2")
    first = start_cli(argv)
    try:
        wait_until(lambda: out.exists() and len(out.read_text().splitlines()) >= 3, first)
        again = second([*argv, "--resume"])
        assert again.returncode == 2, again.stderr
        errors = [line for line in again.stderr.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1 and "being written by another chainform process" in errors[0]
        assert "Traceback" not in again.stderr
    finally:
        gate.set()
    _, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    lines = read_lines(out)
    assert sorted(int(line["_map"]["key"]) for line in lines) == list(range(10))  # each once
    assert len(emulator.requests) == 10  # no row billed twice


def test_a_second_resume_of_a_batch_run_creates_no_batch_and_writes_nothing(
    tmp_path: Path, emulator: Emulator
) -> None:
    from map_helpers import TOOLS_PY, answer_with_tool

    tools_file = tmp_path / "tools.py"
    tools_file.write_text(TOOLS_PY)
    inp, out = write_orders(tmp_path / "in.jsonl", 6), tmp_path / "out.jsonl"
    emulator.default = answer_with_tool
    emulator.batches.hold = True
    argv = map_argv(inp, out, emulator.base_url, tools_file, "--batch", "--batch-poll", "0.05")
    first = start_cli(argv)
    try:
        wait_until(lambda: bool(emulator.batches.created), first)
        again = second([*argv, "--resume"])
        assert again.returncode == 2 and "being written by another" in again.stderr, again.stderr
        assert len(emulator.batches.created) == 1
    finally:
        emulator.batches.hold = False
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert_exactly_once(read_lines(out), 6)
    assert len(emulator.batches.created) == 2  # one a round


def test_a_lock_holder_killed_with_sigkill_leaves_no_obstacle_and_an_ended_run_no_file() -> None:
    import signal
    import sys

    import pytest

    from chainform._map._lock import MapLockedError, holding, lock_path

    code = "from chainform._map._lock import holding\nwith holding('run', 'r1', 'map run r1'):\n print('held', flush=True)\n input()"
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        taken = rf"map run r1 is being written by .* \(process {child.pid}\)"
        with pytest.raises(MapLockedError, match=taken), holding("run", "r1", "map run r1"):
            pass
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    with holding("run", "r1", "map run r1"):  # the kernel released the dead holder's lock
        assert lock_path("run", "r1").exists()
    assert not lock_path("run", "r1").exists()


def test_one_output_file_has_one_writer_whatever_the_home(
    tmp_path: Path, emulator: Emulator, held_rows: Any, home: Path
) -> None:
    import os

    gate = held_rows(answer_text, order_number, 3)  # rows 3.. wait: the first run is mid-way
    emulator.default = gate
    inp, out = write_orders(tmp_path / "in.jsonl", 8), tmp_path / "out.jsonl"
    argv = map_argv(inp, out, emulator.base_url, None, "--concurrency", "2")
    first = start_cli(argv)
    other = {**os.environ, "CHAINFORM_HOME": str(tmp_path / "other-home")}  # its own log and locks
    try:
        gate.wait(first, 2, lambda: out.exists() and len(out.read_text().splitlines()) == 3)
        for extra in (["--resume"], []):
            again = start_cli([*argv, *extra], env=other)
            _, err = again.communicate(timeout=120)
            assert again.returncode == 2, err
            [line] = [x for x in err.splitlines() if x.startswith("Error:")]
            assert "being written by another chainform process" in line and f"process {first.pid}" in line
            assert "Traceback" not in err
    finally:
        gate.release()
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert sorted(int(line["_map"]["key"]) for line in read_lines(out)) == list(range(8))  # each once
    assert len(emulator.requests) == 8  # no row paid twice
    assert not (tmp_path / ".out.jsonl.lock").exists()  # an ended run leaves no lock file
