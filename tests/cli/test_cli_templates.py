"""Templates as llm's: `--save NAME` keeps a prompt's settings, `-t NAME` uses them again
(`-p` fills parameters), `templates list/show/edit/path`; bad templates are one `Error:` line."""

from __future__ import annotations

import json

import pytest
from cli_helpers import Scripted

from chainform.store import Store
from chainform.testing import tool_call

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def _sent(scripted: Scripted, n: int = -1):
    assert scripted.client is not None
    return scripted.client.requests[n]


def test_save_keeps_every_setting_and_sends_nothing(run, scripted: Scripted, home, tmp_path) -> None:
    tools = tmp_path / "tools.py"
    tools.write_text("def add(a: int, b: int) -> int:\n    'Add two numbers.'\n    return a + b\n")
    scripted.script([])
    saved = run(
        "Add $a and $input", "-s", "Be exact.", "-m", "4o-mini", "-T", "current_time",
        "--functions", str(tools), "--schema", "total int", "-o", "temperature", "0.2",
        "-p", "a", "2", "--save", "adder",
    )  # fmt: skip
    assert saved.exit_code == 0, saved.output
    assert "Template 'adder' saved" in saved.stderr and saved.stdout == ""
    assert scripted.client is not None and scripted.client.requests == []
    assert not Store().recent(1)
    shown = json.loads(run("templates", "show", "adder").stdout)
    assert shown == {
        "prompt": "Add $a and $input",
        "system": "Be exact.",
        "model": "4o-mini",
        "tools": ["current_time"],
        "functions": [str(tools.resolve())],
        "schema": {"type": "object", "properties": {"total": {"type": "integer"}}, "required": ["total"]},
        "options": {"temperature": 0.2},
        "defaults": {"a": "2"},
    }
    assert (home / "templates" / "adder.json").stat().st_mode & 0o077 == 0
    assert run("templates", "path").stdout.strip() == str(home / "templates")
    assert run("templates", "list").stdout == "adder : Add $a and $input\n"
    assert run("templates").stdout == run("templates", "list").stdout

    scripted.script([tool_call("add", a=2, b=3), '{"total": 5}'])
    used = run("3", "-t", "adder", "-p", "a", "4")
    assert used.exit_code == 0, used.output
    assert json.loads(used.stdout) == {"total": 5}
    messages, options = _sent(scripted, 0)
    assert messages[0].text == "Be exact." and messages[-1].text == "Add 4 and 3"
    assert options.temperature == 0.2 and {t.name for t in options.tools or ()} >= {"add", "current_time"}
    assert scripted.asked[-1][0] == "4o-mini"
    assert Store().recent(1)[0].system == "Be exact."


def test_the_line_wins_over_the_template(run, scripted: Scripted) -> None:
    run(
        "Translate to $lang",
        "-s",
        "Terse.",
        "-o",
        "temperature",
        "0.5",
        "-p",
        "lang",
        "German",
        "--save",
        "tr",
    )
    scripted.script(["Bonjour", "Hallo"])
    assert (
        run(
            "hello", "-t", "tr", "-s", "Polite.", "-o", "temperature", "0.1", "-p", "lang", "French"
        ).exit_code
        == 0
    )
    messages, options = _sent(scripted)
    assert messages[0].text == "Polite." and messages[-1].text == "Translate to French\n\nhello"
    assert options.temperature == 0.1
    assert run("-t", "tr", input="hi there").exit_code == 0  # stdin is $input (appended: no $input named)
    assert _sent(scripted)[0][-1].text == "Translate to German\n\nhi there"


def test_a_template_without_prompt_takes_the_line_s(run, scripted: Scripted) -> None:
    assert run("-s", "You are a pirate.", "--save", "pirate").exit_code == 0
    scripted.script(["Arr"])
    assert run("Say hi", "-t", "pirate").stdout == "Arr\n"
    assert [m.text for m in _sent(scripted)[0]] == ["You are a pirate.", "Say hi"]
    empty = run("-t", "pirate", input="")
    assert empty.exit_code == 2 and "no prompt given" in empty.stderr


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("hi", "-t", "nosuch"), "no template 'nosuch'"),
        (("hi", "-t", "../etc/passwd"), "is not a template name"),
        (("templates", "show", "nosuch"), "no template 'nosuch'"),
        (("hi", "-p", "a", "b"), "give -t NAME"),
        (("hi", "-t", "needs"), "needs $who: pass -p who VALUE"),
        (("hi", "-t", "broken"), "is not a valid template at tools"),
        (("hi", "-t", "badopt"), "temperature must be at least 0"),
        (("hi", "-t", "badschema"), "schema"),
        (("x", "--schema", '{"type": 5}', "--save", "never"), "schema"),
    ],
)
def test_bad_templates_are_one_error_line(run, scripted: Scripted, home, args, why: str) -> None:
    folder = home / "templates"
    folder.mkdir(parents=True)
    (folder / "needs").with_suffix(".json").write_text('{"prompt": "Hello $who"}')
    (folder / "broken.json").write_text('{"tools": "current_time"}')
    (folder / "badopt.json").write_text('{"prompt": "x", "options": {"temperature": -1}}')
    (folder / "badschema.json").write_text('{"prompt": "x", "schema": {"type": "no-such-type"}}')
    scripted.script([])
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert result.stderr.count("Error:") == 1 and why in result.stderr
    assert scripted.client is not None and scripted.client.requests == []
    assert not (folder / "never.json").exists()


def test_templates_list_shows_a_broken_file_as_such(run, home) -> None:
    assert run("Hi", "--save", "ok").exit_code == 0
    (home / "templates" / "bad.json").write_text("{not json")
    listed = json.loads(run("templates", "list", "--json").stdout)
    assert listed["ok"] == {"prompt": "Hi"} and "not valid JSON" in listed["bad"]["error"]


def test_templates_edit_opens_the_editor_and_checks_the_result(run, home, monkeypatch) -> None:
    import click

    def editor(filename: str, **_: object) -> None:
        with open(filename, "w") as handle:
            handle.write('{"prompt": "Edited $input"}')

    monkeypatch.setattr(click, "edit", editor)
    assert run("templates", "edit", "fresh").exit_code == 0
    assert json.loads(run("templates", "show", "fresh").stdout) == {"prompt": "Edited $input"}

    def breaks(filename: str, **_: object) -> None:
        with open(filename, "w") as handle:
            handle.write('{"promt": "typo"}')

    monkeypatch.setattr(click, "edit", breaks)
    result = run("templates", "edit", "fresh")
    assert result.exit_code == 2 and "promt" in result.stderr
