"""A reader that closes the pipe early (`chainform logs | head -1`) ends the command quietly with
exit 0, as `git log` does: no `Error: [Errno 32] Broken pipe`, no exit 1. Every command in-process
on a stdout whose reader is gone, and one real pipe whose read end is closed."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_helpers import Scripted

from chainform.cli import cli


class ClosedPipe(io.RawIOBase):
    """The write end of a pipe whose reader went away."""

    def __init__(self) -> None:
        self.broken = True
        self.tries = 0
        self.stderr = io.StringIO()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        if self.broken:
            self.tries += 1
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        return len(data)


@pytest.fixture
def closed_stdout(monkeypatch: pytest.MonkeyPatch) -> Iterator[ClosedPipe]:
    """Installed by the test itself (`install`): pytest sets its own sys.stdout when a test starts."""
    pipe = ClosedPipe()
    pipe.install = lambda: _install(pipe, monkeypatch)  # type: ignore[attr-defined]
    yield pipe
    pipe.broken = False  # what is left in the buffer goes nowhere when the stream is collected


def _install(pipe: ClosedPipe, monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.TextIOWrapper(io.BufferedWriter(pipe), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", stream)
    monkeypatch.setattr(sys, "stderr", pipe.stderr)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8"))


def invoke(*args: str) -> int | None:
    rc: int | None = cli.main(list(args), prog_name="chainform", standalone_mode=False)
    return rc


def _logged(scripted: Scripted) -> None:
    scripted.script(["first answer", "second answer"])
    for prompt in ("one question", "another question"):
        assert invoke(prompt, "-m", "openai/gpt-4.1-mini") in (0, None)


def _key() -> None:
    from chainform.keys import set_key

    set_key("openai", "sk-never-printed")


SETUP: dict[str, Callable[[Scripted], None]] = {"logged": _logged, "key": lambda scripted: _key()}


@pytest.mark.parametrize(
    ("setup", "args"),
    [
        ("logged", ["logs", "-n", "0"]),
        ("logged", ["logs", "--json"]),
        ("logged", ["logs", "cost", "--by", "conversation"]),
        ("logged", ["logs", "--tree"]),
        ("logged", ["logs", "path"]),
        (None, ["schemas", "dsl", "name, age int"]),
        (None, ["models", "--json"]),
        (None, ["models"]),
        (None, ["tools"]),
        (None, ["tools", "--json"]),
        ("key", ["keys", "list"]),
        (None, ["prompt", "a question", "-m", "openai/gpt-4.1-mini"]),
    ],
)
def test_a_closed_pipe_ends_every_command_quietly(
    scripted: Scripted, closed_stdout: ClosedPipe, setup: str | None, args: list[str]
) -> None:
    closed_stdout.install()
    if setup is not None:
        closed_stdout.broken = False
        SETUP[setup](scripted)
        closed_stdout.broken = True
    if args[0] == "prompt":
        scripted.script(["an answer that streams in several chunks"], chunk_size=5)
    closed_stdout.stderr.seek(0)
    closed_stdout.stderr.truncate()
    assert invoke(*args) == 0
    assert closed_stdout.tries >= 1  # it did write, and the write failed
    assert closed_stdout.stderr.getvalue() == ""


def test_schemas_list_into_a_closed_pipe(scripted: Scripted, closed_stdout: ClosedPipe) -> None:
    closed_stdout.install()
    closed_stdout.broken = False
    scripted.script(['{"n": 1}'])
    assert invoke("prompt", "a number", "--schema", "n int", "-m", "openai/gpt-4.1-mini") in (0, None)
    closed_stdout.broken = True
    closed_stdout.stderr.truncate(0)
    assert invoke("schemas", "list") == 0
    assert closed_stdout.tries >= 1 and closed_stdout.stderr.getvalue() == ""


def test_other_os_errors_still_fail(monkeypatch, capsys) -> None:
    """Only the closed pipe is quiet: a full disk is an error."""
    import chainform.keys

    def full() -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(chainform.keys, "keys_path", full)
    assert invoke("keys", "path") == 1
    assert capsys.readouterr().err.startswith("Error: [Errno 28] No space left on device")


def test_a_real_pipe_closed_before_the_output(tmp_path: Path) -> None:
    """`chainform schemas dsl ... | head -0`: the reader is gone before anything is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {**os.environ, "CHAINFORM_HOME": str(tmp_path)}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "chainform.cli", "schemas", "dsl", "name, age int"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr) == (0, "")


@pytest.mark.unit
def test_a_closed_stdin_reads_as_empty_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    """`chainform logs path <&-`: Python starts with `sys.stdin` None; the command still runs."""
    from chainform.cli import main

    monkeypatch.setattr(sys, "stdin", None)
    monkeypatch.setattr(sys, "argv", ["chainform", "logs", "path"])
    with pytest.raises(SystemExit) as ended:
        main()
    assert ended.value.code == 0 and capsys.readouterr().out.strip() == str(home / "logs.db")
