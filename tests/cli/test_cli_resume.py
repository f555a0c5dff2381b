"""`chainform resume` and `--approve-later` in process (click's runner, a scripted model)."""

from __future__ import annotations

import json
from pathlib import Path

from chainform.store import Store

FUNCTIONS = """
SENT = []

def send_mail(to: str, body: str) -> str:
    "Send a mail."
    SENT.append(to)
    return "sent to " + to
"""


def tool_call(name: str, **args: object) -> object:
    from chainform.testing import tool_call as make

    return make(name, **args)


def mail_bob(run, scripted, tmp_path: Path) -> tuple[Path, object, object]:
    """A chain waiting for approval of send_mail: its functions file, scripted client and CLI result."""
    functions = tmp_path / "mail.py"
    functions.write_text(FUNCTIONS)
    client = scripted.script([tool_call("send_mail", to="bob", body="hi"), '{"sent": true}'])
    first = run(
        "Mail Bob", "--functions", str(functions), "--approve-later", "send_mail", "--schema", "sent bool"
    )
    assert first.exit_code == 8, first.output
    return functions, client, first


def test_a_chain_paused_for_approval_is_resumed_from_the_cli(
    home: Path, run, scripted, tmp_path: Path
) -> None:
    functions, client, first = mail_bob(run, scripted, tmp_path)
    [pending] = json.loads(first.stdout)
    assert (pending["tool"], pending["arguments"]) == ("send_mail", {"to": "bob", "body": "hi"})
    [row] = Store().unfinished_chains()
    assert f"chainform resume {row.id}" in first.stderr and row.status == "waiting"
    listed = run("logs", "--unfinished")
    assert row.id in listed.stdout and "waiting" in listed.stdout and "send_mail" in listed.stdout

    resumed = run("resume", row.id, "--functions", str(functions), "--approve", "all")
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout) == {"sent": True}
    assert len(client.requests) == 2  # the first call came from the log
    assert Store().unfinished_chains() == []
    again = run("resume", row.id)  # done: its value again, nothing sent, no tool needed
    assert again.exit_code == 0 and json.loads(again.stdout) == {"sent": True} and len(client.requests) == 2


def test_deny_and_args_from_the_cli(home: Path, run, scripted, tmp_path: Path) -> None:
    functions = tmp_path / "mail.py"
    functions.write_text(FUNCTIONS)
    scripted.script([
        [tool_call("send_mail", to="bob", body="hi"), tool_call("send_mail", to="eve", body="hi")],
        "done",
    ])  # fmt: skip
    first = run("Mail Bob and Eve", "--functions", str(functions), "--approve-later", "send_mail")
    bob, eve = (p["id"] for p in json.loads(first.stdout))
    chain_id = Store().unfinished_chains()[0].id
    resumed = run(
        "resume", chain_id, "--functions", str(functions), "--args", f'{bob}={{"to": "robert", "body": "hi"}}',
        "--deny", f"{eve}=not her", "--td",
    )  # fmt: skip
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout.strip() == "done"
    assert "sent to robert" in resumed.stderr and "Denied by a person: not her" in resumed.stderr
    [call, _last] = sorted(Store().recent(None, chain_id=chain_id), key=lambda r: r.seq)
    assert {r.output for r in call.tool_results} == {"sent to robert", "Error: Denied by a person: not her"}


def test_bad_resume_input_is_one_error_line(home: Path, run, scripted, tmp_path: Path) -> None:
    functions = tmp_path / "mail.py"
    functions.write_text(FUNCTIONS)
    scripted.script([tool_call("send_mail", to="bob", body="hi"), "ok"])
    run("Mail Bob", "--functions", str(functions), "--approve-later", "send_mail")
    row = Store().unfinished_chains()[0]
    cases = {
        ("resume", "01jzzzzzzzzzzzzzzzzzzzzzzz"): "no logged chain",
        ("resume", row.id, "--approve", "all"): "tool(s) 'send_mail' of chain",
        ("resume", row.id, "--functions", str(functions), "--approve", "nope"): "no pending call 'nope'",
        ("resume", row.id, "--functions", str(functions), "--args", "x"): "is not CALL=JSON",
        (
            "resume",
            row.id,
            "--functions",
            str(functions),
            "--args",
            f'{row.pending[0]["id"]}={{"to": 1}}',
        ): "do not fit",
    }
    for args, says in cases.items():
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        assert says in result.stderr and result.stderr.count("Error") == 1, result.stderr
    import sqlite3

    with sqlite3.connect(Store().path) as db:  # a spec edited by hand, then one from a newer version
        db.execute('UPDATE chains SET spec = \'{"version": 1, "model": 3}\' WHERE id = ?', (row.id,))
    result = run("resume", row.id, "--functions", str(functions), "--approve", "all")
    assert result.exit_code == 2 and "Error: the chain's spec is malformed" in result.stderr
    with sqlite3.connect(Store().path) as db:
        db.execute("UPDATE chains SET spec = '{\"version\": 99}' WHERE id = ?", (row.id,))
    result = run("resume", row.id, "--functions", str(functions), "--approve", "all")
    assert result.exit_code == 2 and "newer chainform" in result.stderr
    assert Store().chains(row.id)[0].status == "waiting"


def test_an_interrupted_chain_prints_the_command_that_resumes_it(
    home: Path, run, scripted, tmp_path: Path, monkeypatch
) -> None:
    functions = tmp_path / "stop.py"
    functions.write_text(
        "import os\n\n"
        "def step(n: int) -> int:\n"
        '    "Do step n."\n'
        "    if os.environ.get('STOP_AT') == str(n):\n"
        "        raise KeyboardInterrupt\n"
        "    return n * 10\n"
    )
    client = scripted.script([tool_call("step", n=1), tool_call("step", n=2), '{"total": 30}'])
    monkeypatch.setenv("STOP_AT", "2")
    first = run("Do the steps", "--functions", str(functions), "--schema", "total int")
    monkeypatch.delenv("STOP_AT")
    assert first.exit_code == 130
    [row] = Store().unfinished_chains()
    assert row.status == "interrupted" and f"Resume with: chainform resume {row.id}" in first.stderr
    resumed = run("resume", row.id, "--functions", str(functions))
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout) == {"total": 30} and len(client.requests) == 3


def test_a_file_the_log_lost_is_one_error_line_at_resume(home: Path, run, scripted, tmp_path: Path) -> None:
    import sqlite3

    from PIL import Image

    from chainform.clients.profiles import IMAGES
    from chainform.testing import ScriptedClient

    functions = tmp_path / "mail.py"
    functions.write_text(FUNCTIONS)
    Image.new("RGB", (8, 8), "white").save(tmp_path / "note.png")
    vision = ScriptedClient([]).profile.replace(media=IMAGES)  # the scripted model, seeing images
    client = scripted.script([tool_call("send_mail", to="bob", body="hi"), "ok"], profile=vision)
    first = run(
        "Mail it",
        "-a",
        str(tmp_path / "note.png"),
        "--functions",
        str(functions),
        "--approve-later",
        "send_mail",
    )
    assert first.exit_code == 8, first.output
    [row] = Store().unfinished_chains()
    with sqlite3.connect(Store().path) as db:
        db.execute("DELETE FROM attachments")
    result = run("resume", row.id, "--functions", str(functions), "--approve", "all")
    assert result.exit_code == 2 and result.stderr.count("Error") == 1, result.output
    assert "Error: a file the prompt of chain" in result.stderr and "is not in the log" in result.stderr
    assert len(client.requests) == 1 and Store().chains(row.id)[0].status == "waiting"


def test_a_log_edited_by_hand_is_one_error_line_and_stays_as_it_is(
    home: Path, run, scripted, tmp_path: Path
) -> None:
    import sqlite3

    functions, client, _ = mail_bob(run, scripted, tmp_path)
    [row] = Store().unfinished_chains()
    spec = json.loads(row.spec)
    edits = {  # column, value, what the error says
        "strategy": ("spec", {**spec, "strategy": "bogus"}, "strategy 'bogus' is none of"),
        "stop_at_tools": ("spec", {**spec, "stop_at_tools": ["zzz"]}, "stop_at_tools names ['zzz']"),
        "hosted": (
            "spec",
            {**spec, "hosted_tools": [{"kind": "web_search"}]},
            "has no hosted web_search tool",
        ),
        "pending": ("pending", [{"tool": "send_mail"}], "its pending calls (chains.pending) are not"),
    }
    for name, (column, value, says) in edits.items():
        with sqlite3.connect(Store().path) as db:
            db.execute(f"UPDATE chains SET {column} = ? WHERE id = ?", (json.dumps(value), row.id))
            before = db.execute("SELECT * FROM chains").fetchall()
        result = run("resume", row.id, "--functions", str(functions), "--approve", "all")
        [line] = result.stderr.strip().splitlines()
        assert result.exit_code == 2 and line.startswith("Error: ") and says in line, (name, result.output)
        with sqlite3.connect(Store().path) as db:
            assert db.execute("SELECT * FROM chains").fetchall() == before, name
            db.execute(
                "UPDATE chains SET spec = ?, pending = ? WHERE id = ?",
                (row.spec, json.dumps(row.pending), row.id),
            )
    assert len(client.requests) == 1  # nothing was sent
    resumed = run("resume", row.id, "--functions", str(functions), "--approve", "all")
    assert resumed.exit_code == 0 and json.loads(resumed.stdout) == {"sent": True}


def test_a_resume_while_another_process_holds_the_chain_is_one_error_line(
    home: Path, run, scripted, tmp_path: Path
) -> None:
    import sqlite3

    from chainform.chain._lock import ChainLock

    functions, client, _ = mail_bob(run, scripted, tmp_path)
    [row] = Store().unfinished_chains()
    other = ChainLock(Store().path, row.id)  # what a second process's resume holds while it runs
    assert other.acquire()
    try:
        with sqlite3.connect(Store().path) as db:
            before = (
                db.execute("SELECT * FROM chains").fetchall(),
                db.execute("SELECT * FROM responses").fetchall(),
            )
        result = run("resume", row.id, "--functions", str(functions), "--approve", "all")
        [line] = result.stderr.strip().splitlines()
        assert result.exit_code == 2 and line.startswith("Error: ") and "running in another process" in line
        with sqlite3.connect(Store().path) as db:
            after = (
                db.execute("SELECT * FROM chains").fetchall(),
                db.execute("SELECT * FROM responses").fetchall(),
            )
        assert after == before and len(client.requests) == 1  # nothing sent, nothing logged or changed
    finally:
        other.release()
    resumed = run("resume", row.id, "--functions", str(functions), "--approve", "all")
    assert resumed.exit_code == 0 and json.loads(resumed.stdout) == {"sent": True}
