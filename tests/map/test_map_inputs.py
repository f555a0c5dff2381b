"""Hostile `map` inputs: bytes that are not UTF-8, missing and null fields, broken templates, an
output that is a directory. A bad row costs that row (an `input` error naming its line), never the
run; a template or output that could serve no row is refused before any row runs."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from map_helpers import read_lines

import chainform as cf
from chainform._map._inputs import MapInputError, Row, check_template, read_file
from chainform.cli import cli
from chainform.testing import ScriptedClient

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def echo(messages, options) -> str:
    return "seen: " + messages[-1].text


def scripted_map(monkeypatch) -> ScriptedClient:
    """The CLI's map model is a ScriptedClient answering every row with its prompt."""
    from chainform.cli import _map

    client = ScriptedClient([echo] * 50)
    monkeypatch.setattr(_map, "map_model", lambda name, **kw: cf.AsyncModel(client, name="scripted"))
    return client


def invoke(*args: str, input: bytes | str | None = None):
    return CliRunner().invoke(cli, ["map", *args], input=input, catch_exceptions=False)


@pytest.mark.parametrize(
    ("name", "content", "fmt"),
    [
        ("in.txt", b"first\nbad \xff byte\nthird\n", "lines"),
        ("in.jsonl", b'{"text": "first"}\n{"text": "bad \xff"}\n{"text": "third"}\n', "jsonl"),
        ("in.csv", b"text\nfirst\nbad \xfe\nthird\n", "csv"),
    ],
)
def test_a_line_that_is_not_utf8_is_an_input_error_with_its_number(tmp_path, name, content, fmt) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    items = list(read_file(str(path)))
    assert len(items) == 3
    assert isinstance(items[1], MapInputError)
    line = 3 if fmt == "csv" else 2  # the CSV header is line 1
    assert f"line {line} is not valid UTF-8" in str(items[1])
    assert [items[0], items[2]] in (["first", "third"], [{"text": "first"}, {"text": "third"}])


def test_binary_stdin_runs_every_readable_line(tmp_path, monkeypatch) -> None:
    scripted_map(monkeypatch)
    out = tmp_path / "out.jsonl"
    result = invoke("-", "-o", str(out), "-m", "scripted", "-n", input=b"one\n\xff\xfe\x00bin\nthree\n")
    assert result.exit_code == 9, result.output  # a row failed
    lines = sorted(read_lines(out), key=lambda x: x["_map"]["index"])
    assert [x.get("value") for x in lines] == ["seen: one", None, "seen: three"]
    assert (
        lines[1]["error"]["phase"] == "input" and "line 2 is not valid UTF-8" in lines[1]["error"]["message"]
    )
    assert "2 ok, 1 failed" in result.stderr


def test_missing_csv_column_and_json_null_are_input_errors_not_none(tmp_path, monkeypatch) -> None:
    client = scripted_map(monkeypatch)
    csv_in = tmp_path / "in.csv"
    csv_in.write_text("name,city,extra\nann,Paris,x\nbob\ncid,Rome,y,\n")  # bob lacks city; cid: empty extra
    out = tmp_path / "out.jsonl"
    result = invoke(str(csv_in), "-o", str(out), "-m", "scripted", "-n", "--prompt", "{name} in {city}")
    assert result.exit_code == 9, result.output  # a row failed
    lines = sorted(read_lines(out), key=lambda x: x["_map"]["index"])
    assert [x.get("value") for x in lines] == ["seen: ann in Paris", None, "seen: cid in Rome"]
    assert "names 'city', which this row does not have" in lines[1]["error"]["message"]
    assert lines[0]["extra"] == "x" and lines[2]["extra"] == "y"  # columns keep their header names
    assert not any("None" in m.text for req in client.requests for m in req[0])

    rows = [{"text": "ok"}, {"text": None}]
    results = sorted(
        cf.Model(ScriptedClient([echo] * 2)).map(rows, prompt="say {text}", log=False), key=lambda r: r.index
    )
    assert results[0].text == "seen: say ok"
    assert results[1].error is not None and results[1].error.phase == "input"
    assert "'text' is null" in results[1].error.message


def test_a_csv_row_longer_than_its_header_is_an_input_error(tmp_path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("a,b\n1,2\n3,4,5\n")
    items = list(read_file(str(path)))
    assert items[0] == {"a": "1", "b": "2"}
    assert isinstance(items[1], MapInputError) and "line 3 has 3 fields, the header 2" in str(items[1])


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("{text", "broken"),
        ("a } b", "broken"),
        ("{}", "positional"),
        ("{0}", "positional"),
        ("{x!z}", "conversion"),
    ],
)
def test_a_broken_template_is_refused_before_any_row(tmp_path, monkeypatch, template, why) -> None:
    client = scripted_map(monkeypatch)
    inp = tmp_path / "in.txt"
    inp.write_text("one\ntwo\n")
    out = tmp_path / "out.jsonl"
    result = invoke(str(inp), "-o", str(out), "-m", "scripted", "-n", "--prompt", template)
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and why in errors[0] and "--prompt" in errors[0]
    assert client.requests == [] and not out.exists()
    with pytest.raises(MapInputError, match=why):
        cf.Model(ScriptedClient([])).map(["one"], prompt=template)


def test_good_templates_list_their_fields() -> None:
    assert check_template("{a} and {b.c} and {d[0]!r:>5} {a}") == ("a", "b", "d")
    assert Row(0, "0", {"a": 1, "b": 2}).prompt("{a}+{b}") == "1+2"


def test_output_that_is_a_directory_says_so(tmp_path, monkeypatch) -> None:
    scripted_map(monkeypatch)
    inp = tmp_path / "in.txt"
    inp.write_text("one\n")
    result = invoke(str(inp), "-o", str(tmp_path), "-m", "scripted", "-n")
    assert result.exit_code == 2
    assert "is a directory" in result.stderr and "already holds rows" not in result.stderr


def test_a_damaged_log_stops_map_before_any_row(tmp_path, monkeypatch, damaged_log) -> None:
    client = scripted_map(monkeypatch)
    inp = tmp_path / "in.txt"
    inp.write_text("one\n")
    out = tmp_path / "out.jsonl"
    result = invoke(str(inp), "-o", str(out), "-m", "scripted")
    assert result.exit_code == 2 and "is damaged" in result.stderr and "--no-log" in result.stderr
    assert client.requests == [] and not out.exists()
    assert invoke(str(inp), "-o", str(out), "-m", "scripted", "--no-log").exit_code == 0


DUPLICATED = (
    '{"id": 1, "text": "a"}\n{"id": 2, "text": "b"}\n\n{"id": 2, "text": "c"}\n{"id": 3, "text": "d"}\n'
)


@pytest.mark.parametrize("resume", [False, True])
def test_duplicate_ids_are_refused_before_any_call_naming_both_lines(tmp_path, monkeypatch, resume) -> None:
    client = scripted_map(monkeypatch)
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text(DUPLICATED)
    if resume:  # a cut output: the resume must not call the second id 2 done
        out.write_text("")
    argv = [str(inp), "-o", str(out), "-m", "scripted", "--prompt", "{text}", "--id-field", "id", "-n"]
    result = CliRunner().invoke(cli, ["map", *argv, *(["--resume"] if resume else [])])
    assert result.exit_code == 2, result.output
    [line] = [x for x in result.output.splitlines() if "Error" in x]
    assert "lines 2 and 4" in line and "'id'" in line and str(inp) in line
    assert client.requests == []


def test_the_library_refuses_a_list_with_one_id_twice_and_fails_a_streamed_repeat(monkeypatch) -> None:
    client = ScriptedClient([echo] * 10)
    model = cf.Model(client, name="scripted")
    items = [{"id": 1, "text": "a"}, {"id": 2, "text": "b"}, {"id": 2, "text": "c"}]
    with pytest.raises(MapInputError, match=r"inputs 1 and 2 have the same 'id'"):
        list(model.map(items, prompt="{text}", id_field="id", log=False))
    assert client.requests == []
    results = sorted(model.map(iter(items), prompt="{text}", id_field="id", log=False), key=lambda r: r.index)
    assert [r.error is None for r in results] == [True, True, False]
    assert "is also row 1's" in str(results[2].error)


def _fail_writes_to(path) -> None:
    """From now on, this process's writes to `path` fail with a real OS error: the descriptor that
    has it open for appending is swapped (dup2) for one opened read only (works as root, unlike a mode)."""
    import os

    def target(fd: str) -> str | None:
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed by another thread since the listing (CI: FileNotFoundError)
            return None

    [fd] = [int(fd) for fd in os.listdir("/proc/self/fd") if target(fd) == str(path.resolve())]
    read_only = os.open(path, os.O_RDONLY)
    os.dup2(read_only, fd)
    os.close(read_only)


def test_an_output_that_cannot_be_written_mid_run_names_the_file_the_error_and_the_resume(
    tmp_path, monkeypatch
) -> None:
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text("".join(f'{{"text": "row {n}"}}\n' for n in range(6)))

    broken: list[str] = []

    def answer(messages, options) -> str:
        if messages[-1].text == "row 3" and not broken:  # rows 0-2 are written: OUT goes bad mid-run
            broken.append("once")
            _fail_writes_to(out)
        return "seen: " + messages[-1].text

    client = ScriptedClient([answer] * 10)
    monkeypatch.setattr("chainform.cli._map.map_model", lambda name, **kw: cf.AsyncModel(client, name="s"))
    argv = [str(inp), "-o", str(out), "-m", "s", "--prompt", "{text}", "-n", "--concurrency", "1"]
    result = CliRunner().invoke(cli, ["map", *argv])
    assert result.exit_code == 1, result.output
    [line] = [x for x in result.output.splitlines() if x.startswith("Error:")]
    assert f"cannot write the output {out}" in line and "OSError: Bad file descriptor" in line
    assert "3 finished rows" in line and f"chainform map {inp} -o {out} ... --resume" in line
    assert len(read_lines(out)) == 3  # what was written is kept: a resume runs the rest
    result = CliRunner().invoke(cli, ["map", *argv, "--resume"])
    assert result.exit_code == 0, result.output
    assert sorted(x["value"] for x in read_lines(out)) == [f"seen: row {n}" for n in range(6)]


def test_an_output_folder_that_cannot_take_a_resume_names_the_file_and_the_error(
    tmp_path, monkeypatch
) -> None:
    from chainform._map._jsonl import JsonlSink, MapWriteError

    out = tmp_path / "out.jsonl"
    out.write_text('{"_map": {"run": "r", "key": "0"}, "error": {"kind": "x"}}\n')
    sink = JsonlSink(out)
    monkeypatch.setattr(
        "chainform._map._jsonl.os.fsync",
        lambda fd: (_ for _ in ()).throw(OSError(28, "No space left on device")),
    )
    with pytest.raises(
        MapWriteError, match=r"cannot write the output .*out.jsonl \(OSError: No space left on device"
    ):
        sink.prepare(resume=True)
    assert out.read_text().count("\n") == 1  # the file is as it was
