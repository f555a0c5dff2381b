"""Hostile input to the llm-habit commands (templates, aliases, fragments): files edited by hand
with anything in them, and values no user means. Each is one `Error:` line, exit 2, no call sent."""

from __future__ import annotations

import json
import os

import pytest
from cli_helpers import Scripted

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def _template(home, name: str, text: str) -> None:
    folder = home / "templates"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(text)


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda path: os.mkfifo(path), "is not a regular file"),  # was: open() waited for a writer forever
        (
            lambda path: os.symlink("/dev/zero", path),
            "is not a regular file",
        ),  # was: read until memory ran out
        (
            lambda path: path.write_text("[" * 50_000 + "]" * 50_000),
            "nested more than 100 levels",
        ),  # was RecursionError, exit 1
        (lambda path: path.write_text('{"prompt": "x", "options": {"temperature": NaN}}'), "not valid JSON"),
    ],
    ids=["fifo", "device", "deep", "nan"],
)
def test_a_hostile_template_file_is_one_error_line(run, scripted: Scripted, home, make, why: str) -> None:
    (home / "templates").mkdir(parents=True)
    make(home / "templates" / "evil.json")
    scripted.script([])
    for args in (("hi", "-t", "evil"), ("templates", "show", "evil")):
        result = run(*args)
        assert result.exit_code == 2, result.output
        assert result.stderr.count("Error:") == 1 and why in result.stderr, result.stderr
        assert "content=" not in result.stderr  # the attachment reader's advice is not a template's
    assert scripted.client is not None and scripted.client.requests == []
    listed = run("templates", "list", "--json")  # one broken file never ends the listing
    assert listed.exit_code == 0 and why in json.loads(listed.stdout)["evil"]["error"]


def test_a_template_s_max_tokens_and_stop_are_the_options_o_takes(run, scripted: Scripted, home) -> None:
    # `-o max_tokens` is checked and sent as max_output_tokens; a hand-written template's was sent to
    # the provider unchecked as an extra field named max_tokens (NaN or 1e30 included).
    _template(home, "short", '{"prompt": "x", "options": {"max_tokens": 50, "stop": "END"}}')
    scripted.script(["ok"])
    assert run("-t", "short").exit_code == 0
    _, options = scripted.client.requests[-1]  # type: ignore[union-attr]
    assert options.max_output_tokens == 50 and options.stop_sequences == ["END"]
    assert "max_tokens" not in (options.additional_properties or {})
    _template(home, "huge", '{"prompt": "x", "options": {"max_tokens": 1e30}}')
    result = run("-t", "huge")
    assert result.exit_code == 2 and result.stderr.count("Error:") == 1 and "max_tokens" in result.stderr
    assert len(scripted.client.requests) == 1  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "make",
    [
        lambda path: os.mkfifo(path),  # was: every model name's resolution waited for a writer forever
        lambda path: os.symlink("/dev/zero", path),  # was: read until memory ran out
        lambda path: path.write_bytes(b"\xff\xfe{}"),  # was: UnicodeDecodeError, exit 1
        lambda path: path.write_text("[" * 50_000 + "]" * 50_000),  # was: RecursionError, exit 1
    ],
    ids=["fifo", "device", "not-utf8", "deep"],
)
def test_a_hostile_aliases_file_is_one_error_line(run, home, make) -> None:
    home.mkdir(parents=True, exist_ok=True)
    make(home / "aliases.json")
    for args in (("aliases", "list"), ("hi", "-m", "4o-mini", "--key", "sk-test")):
        result = run(*args)
        assert result.exit_code == 3, result.output  # unknown model (docs/cli.md)
        assert result.stderr.count("Error:") == 1 and "aliases file" in result.stderr


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("--repeat", "99999999999999999999"), "--repeat"),  # was: MemoryError, exit 1 (or the OOM killer)
        (("--concurrency", "99999999999999999999"), "--concurrency"),  # was: MemoryError, exit 1
        (("--csv", "\udcff.csv"), "not a UTF-8 file name"),  # was: UnicodeEncodeError, exit 1
        (("--html", "\udcff.html"), "not a UTF-8 file name"),
    ],
    ids=["repeat", "concurrency", "csv", "html"],
)
def test_eval_flags_past_what_the_machine_holds_are_usage_errors(run, home, tmp_path, args, why) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"text": "a", "expected": {"name": "x"}}\n')
    result = run("eval", str(data), "--schema", "name", "-p", "{text}", "-m", "4o-mini", *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.count("Error:") == 1 and why in result.stderr


def test_map_concurrency_past_what_the_machine_holds_is_a_usage_error(run, tmp_path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"text": "a"}\n')
    result = run("map", str(data), "-m", "4o-mini", "-p", "{text}", "--concurrency", "10000000000")
    assert result.exit_code == 2 and "--concurrency" in result.stderr, result.output


@pytest.mark.parametrize("body", [b"", b"\xff\xfe"])
def test_a_url_fragments_credentials_never_reach_its_error_line(monkeypatch, body: bytes) -> None:
    from chainform.cli import _fragments

    monkeypatch.setattr(_fragments, "_download", lambda url, allow_private_urls: body)
    with pytest.raises(_fragments.FragmentError) as caught:
        _fragments.resolve_fragment("https://ann:s3cret-pass@example.com/notes.txt", None)
    assert "s3cret-pass" not in str(caught.value) and "example.com/notes.txt" in str(caught.value)
