"""`chainform map --attach FIELD` through the openai SDK and the emulator: every row once, each file
logged once however many rows attach it, a bad path a row error (the rest run)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from docs_helpers import receipt_image

from chainform.cli import cli
from chainform.store import Store
from chainform.testing.emulator import Emulator, RecordedRequest

ROWS = 200
FILES = 10


def _answer(request: RecordedRequest) -> Any:
    [user] = [m for m in request.json["messages"] if m["role"] == "user"]
    text = "".join(p.get("text", "") for p in user["content"])
    images = [p for p in user["content"] if p.get("type") == "image_url"]
    assert len(images) == 1 and images[0]["image_url"]["url"].startswith("data:image/png;base64,")
    n = int(re.search(r"order (\d+)", text).group(1))  # type: ignore[union-attr]
    return json.dumps({"id": n, "total": n / 2})


def test_map_over_200_rows_attaches_each_row_file_and_logs_each_file_once(
    tmp_path: Path, emulator: Emulator
) -> None:
    scans = tmp_path / "scans"
    scans.mkdir()
    for k in range(FILES):
        receipt_image([(f"Store {k}", None), ("TOTAL", f"{k}.00")]).resize((160, 60)).save(scans / f"{k}.png")
    inp = tmp_path / "orders.jsonl"
    inp.write_text(
        "".join(
            json.dumps({"text": f"order {n}", "scan": f"scans/{n % FILES}.png"}) + "\n" for n in range(ROWS)
        )
    )
    out = tmp_path / "out.jsonl"
    emulator.default, emulator.record = _answer, True
    argv = ["map", str(inp), "-o", str(out), "--prompt", "Extract: {text}", "--attach", "scan"]
    argv += ["-m", "openai/gpt-4.1-mini", "--base-url", emulator.base_url + "/v1", "--key", "sk-test"]
    result = CliRunner().invoke(cli, [*argv, "--schema", "id int, total float", "--concurrency", "8"])
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(int(line["_map"]["key"]) for line in lines) == list(range(ROWS))  # each row once
    assert all(
        line["value"] == {"id": int(line["text"].split()[1]), "total": int(line["text"].split()[1]) / 2}
        for line in lines
    )
    Store().recent(1)  # spread anything journaled
    with sqlite3.connect(Store().path) as db:
        assert db.execute("SELECT COUNT(*) FROM attachments").fetchone() == (FILES,)
        assert db.execute("SELECT COUNT(*) FROM response_attachments").fetchone() == (ROWS,)
        assert db.execute("SELECT COUNT(DISTINCT response_id) FROM response_attachments").fetchone() == (
            ROWS,
        )


def test_a_row_whose_file_is_missing_is_a_row_error(tmp_path: Path, emulator: Emulator) -> None:
    (tmp_path / "a.txt").write_text("order total 3\n")
    inp = tmp_path / "rows.csv"
    inp.write_text("text,doc\norder 1,a.txt\norder 2,gone.txt\norder 3,\n")
    out = tmp_path / "out.jsonl"
    emulator.default = '{"id": 1, "total": 3}'
    argv = [
        "map",
        str(inp),
        "-o",
        str(out),
        "--prompt",
        "{text}",
        "--attach",
        "doc",
        "--schema",
        "id int, total float",
    ]
    argv += ["-m", "openai/gpt-4.1-mini", "--base-url", emulator.base_url + "/v1", "--key", "sk-test"]
    result = CliRunner().invoke(cli, argv)
    lines = {line["text"]: line for line in map(json.loads, out.read_text().splitlines())}
    assert lines["order 1"]["value"] == {"id": 1, "total": 3}
    assert "gone.txt: no such file" in lines["order 2"]["error"]["message"]
    assert "has no 'doc' to attach" in lines["order 3"]["error"]["message"]
    assert len(emulator.requests) == 1, result.stderr


def _map_rows(tmp_path: Path, emulator: Emulator, rows: str, *extra: str) -> tuple[dict[str, Any], Any]:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "a.txt").write_text("order total 3\n")
    inp = data / "rows.csv"
    inp.write_text(rows)
    out = tmp_path / "out.jsonl"
    emulator.default = '{"id": 1, "total": 3}'
    argv = ["map", str(inp), "-o", str(out), "--prompt", "{text}", "--attach", "doc", *extra]
    argv += ["--schema", "id int, total float", "-m", "openai/gpt-4.1-mini"]
    argv += ["--base-url", emulator.base_url + "/v1", "--key", "sk-test"]
    result = CliRunner().invoke(cli, argv)
    return {line["text"]: line for line in map(json.loads, out.read_text().splitlines())}, result


def test_map_attach_paths_outside_the_input_folder_are_row_input_errors(
    tmp_path: Path, emulator: Emulator
) -> None:
    (tmp_path / "secret.txt").write_text("the password is hunter2\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "link.txt").symlink_to(tmp_path / "secret.txt")
    rows = (
        "text,doc\norder 1,a.txt\norder 2,../secret.txt\n"
        f"order 3,{tmp_path / 'secret.txt'}\norder 4,~/..\norder 5,link.txt\norder 6,../../../../etc/hostname\n"
    )
    lines, result = _map_rows(tmp_path, emulator, rows)
    assert lines["order 1"].get("error") is None, result.stderr
    for n in range(2, 7):
        error = lines[f"order {n}"]["error"]
        assert error["phase"] == "input" and "--attach-root" in error["message"], error
    assert len(emulator.requests) == 1
    assert not any("hunter2" in json.dumps(r.json) for r in emulator.requests)


def test_map_attach_root_allows_the_folder_it_names(tmp_path: Path, emulator: Emulator) -> None:
    (tmp_path / "shared.txt").write_text("order total 3\n")
    lines, result = _map_rows(
        tmp_path, emulator, "text,doc\norder 1,shared.txt\n", "--attach-root", str(tmp_path)
    )
    assert lines["order 1"].get("error") is None, (lines, result.stderr)
