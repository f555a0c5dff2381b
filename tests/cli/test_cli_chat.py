"""`chainform chat` driven in a real terminal (a pseudo-terminal; the child has it as its
controlling terminal, so Ctrl-C is the byte 0x03 typed at it, as a person types it), against the
loopback provider emulator. Every wait is for text or a request to arrive, bounded only so that a
hang fails the test instead of stopping the suite."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from chainform.store import Store
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator, RecordedRequest

HANG = 120.0  # seconds: a bound for a hang, not a measure
_ACQUIRE_TERMINAL = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execv(sys.executable, [sys.executable, '-m', 'chainform.cli', *sys.argv[1:]])"
)
TOOLS = "def get_weather(city: str) -> dict:\n    'Weather for a city.'\n    return {'city': city, 'temp_c': 21.5}\n"


class Terminal:
    """A child process on a pseudo-terminal: `expect` reads until a pattern has appeared."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-c", _ACQUIRE_TERMINAL, *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,  # a session of its own, whose controlling terminal is this one
            close_fds=True,
        )
        os.close(slave)
        self.seen = ""
        self._read_to = 0

    def expect(self, pattern: str) -> str:
        """The output up to and including the next `pattern` (a regex) after the last one matched."""
        compiled = re.compile(pattern)
        while True:
            match = compiled.search(self.seen, self._read_to)
            if match:
                found = self.seen[self._read_to : match.end()]
                self._read_to = match.end()
                return found
            ready, _, _ = select.select([self.master], [], [], HANG)
            assert ready, f"no {pattern!r} within {HANG} s; the terminal shows:\n{self.seen[-2000:]}"
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the child ended and closed the terminal
                chunk = b""
            assert chunk, f"the chat ended before {pattern!r}; the terminal shows:\n{self.seen[-2000:]}"
            self.seen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        os.close(self.master)


class Held:
    """An emulator reply that holds its request until released: the chat is mid-turn, for sure."""

    def __init__(self) -> None:
        self.arrived, self.released = threading.Event(), threading.Event()

    def __call__(self, request: RecordedRequest) -> str:
        self.arrived.set()
        self.released.wait(HANG)
        return "too late"


@pytest.fixture
def held() -> Iterator[Held]:
    gate = Held()
    yield gate
    gate.released.set()  # whatever the test did, the emulator's thread is let go before it stops


def test_a_chat_in_a_terminal_two_turns_with_a_tool_and_a_schema_and_a_cancelled_one(
    home: Path, held: Held
) -> None:
    script = [
        tool_call("get_weather", city="Paris"),
        '{"city": "Paris", "temp_c": 21.5}',
        held,  # the second turn: Ctrl-C while the model is answering
        tool_call("get_weather", city="Rome"),
        '{"city": "Rome", "temp_c": 21.5}',
    ]
    with Emulator(script) as emulator:
        env = {
            **os.environ,
            "CHAINFORM_HOME": str(home),
            "OPENAI_BASE_URL": emulator.base_url + "/v1",
            "OPENAI_API_KEY": "test",
            "TERM": "dumb",
        }
        env.pop("CHAINFORM_MODEL", None)
        args = ["chat", "-m", "openai/gpt-4.1-mini", "--profile", "openai"]  # OpenAI's: a schema with tools
        args += ["--functions", TOOLS, "--schema", "city, temp_c float", "--td"]
        terminal = Terminal(args, env)
        try:
            banner = terminal.expect(r"\n> ")
            assert "Chatting with openai/gpt-4.1-mini" in banner
            terminal.type("Weather in Paris?\r")
            first = terminal.expect(r"\n> ")
            assert "get_weather" in first and json.loads(
                first[first.rindex("\n{") : first.rindex("}") + 1]
            ) == {
                "city": "Paris",
                "temp_c": 21.5,
            }

            terminal.type("And in Berlin, slowly?\r")
            assert held.arrived.wait(HANG), "the second turn's request never reached the emulator"
            terminal.type("\x03")  # Ctrl-C, typed at the terminal
            cancelled = terminal.expect(r"\n> ")
            assert "[turn cancelled]" in cancelled and "too late" not in cancelled
            held.released.set()

            terminal.type("And Rome?\r")
            third = terminal.expect(r"\n> ")
            assert '"Rome"' in third
            terminal.type("\x04")  # Ctrl-D ends the session
            assert terminal.process.wait(HANG) == 0
        finally:
            held.released.set()
            terminal.close()
        requests = emulator.requests

    last = json.dumps(requests[-2].body)
    assert "Weather in Paris?" in last and "And Rome?" in last
    assert "Berlin" not in last  # the cancelled turn added nothing to the history
    calls = Store().recent(None)[::-1]
    assert len({c.conversation_id for c in calls}) == 1  # the log holds one conversation
    prompts = [c.prompt for c in calls]
    assert prompts.count("Weather in Paris?") == 2 and prompts.count("And Rome?") == 2
    assert [c.parsed for c in calls if c.parsed is not None] == [
        {"city": "Paris", "temp_c": 21.5},
        {"city": "Rome", "temp_c": 21.5},
    ]


@pytest.mark.unit
def test_chat_without_a_terminal_is_one_error_line(run, home: Path) -> None:
    result = run("chat", "-m", "openai/gpt-4.1-mini", input="hello\n")
    assert result.exit_code == 2
    assert result.stderr.count("Error:") == 1 and "chat needs a terminal" in result.stderr
    assert result.stderr.startswith("Error:") and not (home / "logs.db").exists()


def _typed(monkeypatch: pytest.MonkeyPatch, *lines: str | type[BaseException]) -> list[str]:
    """`input()` answering with `lines` in turn (an exception class is raised: EOFError is Ctrl-D,
    KeyboardInterrupt Ctrl-C); returns the prompts it was shown."""
    shown: list[str] = []
    pending = list(lines)

    def fake(prompt: str = "") -> str:
        shown.append(prompt)
        item = pending.pop(0)
        if isinstance(item, type):
            raise item()
        return item

    monkeypatch.setattr("builtins.input", fake)
    return shown


@pytest.mark.unit
def test_chat_input_multi_edit_exit_and_interrupts(monkeypatch: pytest.MonkeyPatch) -> None:
    import click

    from chainform.cli._chat import _read_message

    shown = _typed(monkeypatch, "!multi", "first line", "  second", "!end")
    assert _read_message() == "first line\n  second" and shown == ["> ", "... ", "... ", "... "]
    _typed(monkeypatch, "!multi", "half a message", KeyboardInterrupt)
    assert _read_message() == ""  # an unfinished !multi is dropped, not sent
    monkeypatch.setattr(click, "edit", lambda text="": "Written in the editor\n")
    _typed(monkeypatch, "!edit")
    assert _read_message() == "Written in the editor"
    monkeypatch.setattr(click, "edit", lambda text="": None)  # the editor quit without saving
    _typed(monkeypatch, "!edit")
    assert _read_message() == ""
    for ending in ("!exit", "!quit", "exit", EOFError):
        _typed(monkeypatch, ending)
        assert _read_message() is None
    _typed(monkeypatch, KeyboardInterrupt)
    assert _read_message() == ""  # Ctrl-C at the prompt clears the line; the session goes on
    _typed(monkeypatch, "  plain question  ")
    assert _read_message() == "plain question"


@pytest.fixture
def chat(run, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """`chainform chat` in-process, its stdin taken for a terminal (the pty test above proves the
    real one); lines are typed through `input`."""
    from chainform.cli import _chat

    monkeypatch.setattr(_chat, "_stdin_is_terminal", lambda: True)

    def session(*args: str, typed: str):  # type: ignore[no-untyped-def]
        return run("chat", *args, input=typed)

    return session


@pytest.mark.unit
def test_chat_goes_on_with_a_logged_conversation_and_survives_a_failed_turn(chat, run, scripted) -> None:
    from chainform.errors import ProviderError

    scripted.script(["Paris.", ProviderError("the server is down", status=503), "Rome, then."])
    result = chat("-s", "Be terse.", typed="Capital of France?\nAnd of Italy?\nAnd of Italy, again?\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("> ") == 4 and "Paris." in result.stdout and "Rome, then." in result.stdout
    assert result.stderr.count("Error:") == 1 and "the server is down" in result.stderr  # the session went on
    last = [m.text for m in scripted.client.requests[-1][0]]
    assert last == ["Be terse.", "Capital of France?", "Paris.", "And of Italy, again?"]
    calls = Store().recent(None)
    assert len({c.conversation_id for c in calls}) == 1

    scripted.script(["Berlin."])
    assert chat("-c", typed="!multi\nAnd of\nGermany?\n!end\n").exit_code == 0
    sent = [m.text for m in scripted.client.requests[-1][0]]
    assert sent[:2] == ["Capital of France?", "Paris."] and sent[-1] == "And of\nGermany?"
    assert len({c.conversation_id for c in Store().recent(None)}) == 1  # -c: the same conversation


@pytest.mark.unit
def test_chat_from_a_template_with_a_schema(chat, run, scripted) -> None:
    assert run("-s", "You know capitals.", "--schema", "city", "--save", "capitals").exit_code == 0
    scripted.script(['{"city": "Paris"}'])
    result = chat("-t", "capitals", typed="France?\n")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout[result.stdout.index("{") : result.stdout.rindex("}") + 1]) == {
        "city": "Paris"
    }
    assert [m.text for m in scripted.client.requests[0][0]] == ["You know capitals.", "France?"]
    missing = chat("-t", "nosuch", typed="x\n")
    assert (
        missing.exit_code == 2
        and missing.stderr.count("Error:") == 1
        and "no template 'nosuch'" in missing.stderr
    )


@pytest.mark.unit
def test_chat_fragments_go_with_the_first_message_and_every_turn_s_system(
    chat, scripted, tmp_path: Path
) -> None:
    import sqlite3

    notes, style = tmp_path / "notes.txt", tmp_path / "style.txt"
    notes.write_text("We ship on Friday.")
    style.write_text("Answer in French.")
    scripted.script(["Vendredi.", "Oui."])
    result = chat("-s", "Be terse.", "-f", str(notes), "--sf", str(style), typed="When?\nSure?\n")
    assert result.exit_code == 0, result.output
    first, second = ([(m.role, m.text) for m in request[0]] for request in scripted.client.requests)
    assert first == [
        ("system", "Be terse."),
        ("system", "Answer in French."),
        ("user", "We ship on Friday.When?"),
    ]
    assert second == [*first, ("assistant", "Vendredi."), ("user", "Sure?")]
    with sqlite3.connect(Store().path) as db:
        texts = sorted(row[0] for row in db.execute("SELECT content FROM fragments"))
        links = db.execute("SELECT COUNT(*) FROM response_fragments").fetchone()[0]
    assert texts == ["Answer in French.", "We ship on Friday."] and links == 4  # each text once, sent 4 times
    directory = chat("-f", str(tmp_path), typed="x\n")
    assert (
        directory.exit_code == 2
        and directory.stderr.count("Error:") == 1
        and "is a directory" in directory.stderr
    )
