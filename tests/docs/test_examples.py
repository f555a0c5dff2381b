"""Every fenced code block of README.md and docs/*.md runs (docs/testing.md, "The docs' examples").

Blocks are found anew on each run, so a block added to any page is tested without touching this
file. `python` blocks run in this process, `bash` blocks with bash, in a temporary directory holding
the files of tests/docs/files/ and with a fresh CHAINFORM_HOME. HTML comments right before a fence
say what a block needs:

    <!-- example: emulator ["Hello!", {"tool": "get_weather", "args": {"city": "Paris"}}] -->
    <!-- example: continues -->
    <!-- example: setup import math -->
    <!-- example: integration -->
    <!-- example: skip needs a real AWS account -->

Blocks without a language, or in `json`/`text`, are output or data and are not run.

Each line of a bash block runs as written, but its `chainform` is the warm CLI of
tests/cli_server.py (the `cli_bin` fixture): a process of its own per command, forked from one
server per session that has imported the CLI and the SDKs, with the line's argv, directory,
environment, stdin, stdout and stderr, and its exit status back to bash. A new Python process per
line paid those imports each time, most of a short command's CPU (~125 lines across the pages);
running the lines in this process through click's CliRunner would lose what the shell does to them
(pipes, `$(...)`, redirections, exit codes under `set -e`). Emulator blocks get batches that are
done at their first poll (`emulator.batches.instant`), so a `--batch` example does not wait out
`--batch-poll`'s 5 s between polls.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import chainform
from chainform.testing import tool_call
from chainform.testing.emulator import DropConnection, Emulator, Reply

ROOT = Path(__file__).resolve().parents[2]
FILES = Path(__file__).resolve().parent / "files"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LANGUAGES = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
NOT_RUN = {"", "json", "jsonl", "text", "csv", "toml", "yaml"}
KEYWORDS = {"skip", "integration", "continues", "setup", "emulator"}
FENCE = re.compile(r"^```(\w*)\s*$")
NOTE = re.compile(r"^<!-- example: (\w+)\s*(.*?)\s*-->$")
BLOCK_TIMEOUT = 900  # seconds one bash block may run: a bound for a hang, not a measure


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    notes: dict[str, str] = field(default_factory=dict)
    before: Block | None = None  # the page's previous block of the same language

    @property
    def id(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page.name
        return f"{page}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The page's fenced blocks of a language that runs, with the example notes before each."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        language = match.group(1).lower()
        if language not in NOT_RUN:
            if language not in LANGUAGES:
                raise AssertionError(f"{page.name}:{i + 1}: unknown block language {language!r}")
            notes = _notes(lines, i, f"{page.name}:{i + 1}")
            last = next((b for b in reversed(found) if b.language == LANGUAGES[language]), None)
            code = "\n".join(lines[i + 1 : end]) + "\n"
            found.append(Block(page, i + 1, LANGUAGES[language], code, notes, last))
        i = end + 1
    return found


def _notes(lines: list[str], fence: int, where: str) -> dict[str, str]:
    """The `<!-- example: ... -->` lines right above the fence (blank lines between allowed)."""
    notes: dict[str, str] = {}
    j = fence - 1
    while j >= 0 and (not lines[j].strip() or NOTE.match(lines[j].strip())):
        note = NOTE.match(lines[j].strip())
        if note:
            keyword, value = note.groups()
            assert keyword in KEYWORDS, f"{where}: unknown example note {keyword!r}"
            notes[keyword] = value
        j -= 1
    assert "skip" not in notes or notes["skip"], f"{where}: `skip` needs a reason"
    return notes


ALL = [block for page in PAGES for block in blocks(page)]


def _param(block: Block) -> Any:
    marks = [pytest.mark.integration] if "integration" in block.notes else []
    if "skip" in block.notes:
        marks.append(pytest.mark.skip(reason=block.notes["skip"]))
    return pytest.param(block, id=block.id, marks=marks)


def _reply(item: Any) -> Any:
    """One emulator reply from the note's JSON: text, {"tool", "args"}, {"json"}, {"cut": text}
    (an answer stopped at the token limit), {"drop": text, "after": N} (a stream of `text` whose
    connection breaks after N events) or a list (one turn)."""
    if isinstance(item, dict) and "cut" in item:
        return Reply([item["cut"]], finish_reason="length")
    if isinstance(item, dict) and "drop" in item:
        return DropConnection(after_events=item["after"], reply=item["drop"])
    if isinstance(item, list):
        return [_reply(part) for part in item]
    if isinstance(item, dict) and "tool" in item:
        return tool_call(item["tool"], **item.get("args", {}))
    if isinstance(item, dict) and "json" in item:
        return json.dumps(item["json"])
    assert isinstance(item, str), f"an emulator reply is text, a tool call or JSON, not {item!r}"
    return item


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary directory holding tests/docs/files/, the current directory while a block runs."""
    path = tmp_path / "work"
    shutil.copytree(FILES, path)
    monkeypatch.chdir(path)
    return path


def _point_sdks_at(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI's and Anthropic's SDKs pointed at the emulator, and test keys for every provider."""
    for name, value in {
        "OPENAI_BASE_URL": emulator.base_url + "/v1",
        "OPENAI_API_KEY": "test",
        "ANTHROPIC_BASE_URL": emulator.base_url,
        "ANTHROPIC_API_KEY": "test",
        "GEMINI_API_KEY": "test",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
    }.items():
        monkeypatch.setenv(name, value)


def _run_python(block: Block, namespace: dict[str, Any]) -> None:
    if block.before is not None and "continues" in block.notes:
        _run_python(block.before, namespace)
    if "setup" in block.notes:
        exec(block.notes["setup"], namespace)
    code = compile(block.code, block.id, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)
    if inspect.iscoroutine(result):  # a block with a top-level `await`
        asyncio.run(result)


def _run_bash(block: Block, home: Path, cli_bin: Path) -> None:
    """The block's lines run by bash, each `chainform` through `cli_bin`'s (tests/cli_server.py)."""
    env = dict(
        os.environ,
        PATH=os.pathsep.join([str(cli_bin), str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        PYTHONPATH=str(Path(chainform.__file__).resolve().parents[1]),  # the chainform under test
        CHAINFORM_HOME=str(home),
    )
    script = "set -euo pipefail\n" + block.notes.get("setup", "") + "\n" + block.code
    done = subprocess.run(
        ["bash", "-c", script],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT,
    )
    assert done.returncode == 0, f"{block.id} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("block", [_param(b) for b in ALL])
def test_example_runs(
    block: Block, workdir: Path, home: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    with contextlib.ExitStack() as stack:
        if "emulator" in block.notes:
            script = [_reply(item) for item in json.loads(block.notes["emulator"] or "[]")]
            emulator = Emulator(script[:-1], default=script[-1] if script else "ok")
            emulator.batches.instant = True  # a `--batch` run's first poll finds its batch done
            _point_sdks_at(stack.enter_context(emulator), monkeypatch)
        if block.language == "python":
            _run_python(block, {"__name__": "__docs__"})
        else:  # the warm CLI is started for the first bash block: python blocks alone never need it
            _run_bash(block, home, request.getfixturevalue("cli_bin"))


def test_the_collector_finds_the_pages_blocks() -> None:
    """The pages hold blocks of both languages, and a page added to docs/ is read too."""
    assert {b.page.name for b in ALL} >= {"README.md", "cli.md", "tools.md", "map.md", "production.md"}
    assert {b.language for b in ALL} == {"python", "bash"}


def test_notes_are_read_and_checked(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        'Text.\n\n<!-- example: continues -->\n<!-- example: emulator ["hi"] -->\n\n```python\nx = 1\n```\n'
        "\n```json\n{}\n```\n\n<!-- example: skip no reason given below -->\n```bash\ntrue\n```\n",
        encoding="utf-8",
    )
    found = blocks(page)
    assert [(b.line, b.language, b.notes) for b in found] == [
        (6, "python", {"continues": "", "emulator": '["hi"]'}),
        (15, "bash", {"skip": "no reason given below"}),
    ]
    page.write_text("<!-- example: skip -->\n```python\npass\n```\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="needs a reason"):
        blocks(page)
    page.write_text("<!-- example: sikp typo -->\n```python\npass\n```\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="unknown example note"):
        blocks(page)


def test_a_block_that_fails_fails_its_test(tmp_path: Path, workdir: Path, home: Path, cli_bin: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```bash\nchainform --no-such-option\n```\n\n```python\n1 / 0\n```\n", encoding="utf-8")
    bash, python = blocks(page)
    with pytest.raises(AssertionError, match="exited 2"):
        _run_bash(bash, home, cli_bin)
    with pytest.raises(ZeroDivisionError):
        _run_python(python, {})


def _commands_served(log: Path) -> list[str]:
    """The server log's line for each command it ran (written before the client hears the end)."""
    return [line for line in log.read_text().splitlines() if line.startswith("command ")]


def test_each_chainform_line_runs_as_its_own_command_through_the_warm_cli(
    tmp_path: Path, workdir: Path, home: Path, cli_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tests/cli_server.py: stdin, stdout and stderr apart, exit codes (a signal's too), `$(...)`,
    the directory and environment of each command; every line went through the server."""
    (workdir / "die.py").write_text(
        "import os, signal\n\n\ndef die() -> str:\n    'End the process.'\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n    return 'still here'\n",
        encoding="utf-8",
    )
    page = tmp_path / "page.md"
    page.write_text(
        "```bash\n"
        "cat notes.txt | chainform 'Summarize' -m openai/gpt-4.1-mini > answer.txt 2> err.txt\n"
        "chainform --no-such-option 2> usage.txt || test $? -eq 2\n"
        'test "$(chainform logs path)" = "$CHAINFORM_HOME/logs.db"\n'
        'test "$(CHAINFORM_HOME=/elsewhere chainform logs path)" = /elsewhere/logs.db\n'
        "mkdir sub && (cd sub && chainform logs backup copy.db 2> /dev/null) && test -s sub/copy.db\n"
        "chainform 'Stop' --functions die.py -m openai/gpt-4.1-mini || test $? -eq 143  # SIGTERM\n"
        "```\n",
        encoding="utf-8",
    )
    [block] = blocks(page)
    log = cli_bin.parent / "server.log"
    served = len(_commands_served(log))
    with Emulator(["A short summary.", tool_call("die")]) as emulator:
        _point_sdks_at(emulator, monkeypatch)
        _run_bash(block, home, cli_bin)
    assert "Meeting notes" in json.dumps(emulator.requests[0].json)  # stdin reached the command
    assert (workdir / "answer.txt").read_text() == "A short summary.\n"
    assert (workdir / "err.txt").read_text() == ""
    assert "No such option" in (workdir / "usage.txt").read_text()
    commands = _commands_served(log)[served:]
    assert len(commands) == 6 and "exit -15," in commands[-1]
