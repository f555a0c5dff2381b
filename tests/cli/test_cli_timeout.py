"""`--timeout`: chainform's own connect and idle-read timeouts from the command line (issue 28 item 2)."""

from __future__ import annotations

import pytest

from chainform.testing.emulator import Emulator, Stall


def test_cli_timeout_ends_a_stalled_stream_with_exit_3_and_one_line(run, emulator: Emulator) -> None:
    emulator.add(Stall(30, reply="an answer that stops in the middle", after_events=3))
    url = emulator.base_url + "/v1"
    result = run("hi", "-m", "openai/gpt-4.1-mini", "--base-url", url, "--key", "sk-t", "--timeout", "1,0.5")
    assert result.exit_code == 3, result.stderr  # the stall (30 s) ended by the read timeout
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("Error: ") and "read timeout" in line and "0.5 s" in line
    assert result.stdout.startswith("an a")  # what arrived was shown


def test_cli_timeout_long_answer_that_keeps_streaming_is_not_cut(run, emulator: Emulator) -> None:
    """`--timeout 3` is the read timeout, not the answer's length: 36 events 0.1 s apart (3.5 s in
    all) are not cut. Real seconds (the SDK's own timeouts are part of it), so the margin is wide:
    only a test process stalled for 2.9 s between two events would read as a silent server."""
    emulator.add(Stall(0.1, reply="x" * 288, after_events=1, every=True))  # 36 events of 8
    url = emulator.base_url + "/v1"
    result = run("hi", "-m", "openai/gpt-4.1-mini", "--base-url", url, "--key", "sk-t", "--timeout", "3")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "x" * 288


@pytest.mark.parametrize("bad", ["soon", "0", "-1", "1,2,3", "nan", ","])
def test_cli_bad_timeout_is_a_usage_error(run, bad: str) -> None:
    result = run("hi", "-m", "openai/gpt-4.1-mini", "--key", "sk-t", "--timeout", bad)
    assert result.exit_code == 2
    assert "--timeout" in result.stderr and "Traceback" not in result.stderr


def test_cli_timeout_with_the_in_process_model_is_refused(run) -> None:
    result = run("hi", "-m", "local", "--timeout", "5")
    assert result.exit_code != 0 and "timeout" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_timeout_as_a_model_option_is_refused_not_sent(run) -> None:
    result = run("hi", "-m", "openai/gpt-4.1-mini", "--key", "sk-t", "-o", "timeout", "30")
    assert result.exit_code == 2 and "--timeout" in result.stderr
