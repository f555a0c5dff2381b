"""docs/evals.md and README's eval lines run as written: the Python blocks marked `# runnable`, and
the shell block (make the invoices, evaluate, show, compare) against the emulator; with the real
embedded model (`-m local`, as printed) in the integration set."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chainform.testing.emulator import Emulator, RecordedRequest

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "evals.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(# runnable.*?)```", DOC, re.S)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"evals.md#{i}" for i in range(len(BLOCKS))])
def test_runnable_python_blocks(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(code, "<docs/evals.md>", "exec"), {"__name__": "__docs__"})
    assert capsys.readouterr().out.strip()


def test_the_doc_has_its_examples() -> None:
    assert len(BLOCKS) == 2
    assert "2 1.0" in BLOCKS[0] and "test_extraction_stays_right()" in BLOCKS[1]


def shell_commands(text: str) -> list[str]:
    block = re.search(r"```bash\n(python scripts/make_invoices.py.*?)```", text, re.S)
    assert block, "no eval block"
    return [line for line in block.group(1).replace("\\\n", " ").splitlines() if line.strip()]


def run_block(
    commands: list[str],
    workdir: Path,
    count: int,
    model_args: list[str] | None,
    cli_bin: Path,
    repeat: int = 3,
) -> list[str]:
    """Run the block's lines in `workdir` (the eval id the first eval prints fills EVAL_ID), with
    `count` documents and each run `repeat` times (the block says 3), each `chainform` through
    `cli_bin`'s warm CLI (tests/cli_server.py)."""
    outputs, eval_id = [], None
    for line in commands:
        line = line.replace("EVAL_ID", eval_id or "EVAL_ID").replace("--repeat 3", f"--repeat {repeat}")
        argv = shlex.split(line)
        if argv[0] == "python":
            argv = [sys.executable, str(ROOT / argv[1]), *argv[2:], "--count", str(count)]
        else:
            assert argv[0] == "chainform"
            if model_args is not None and "-m" in argv:
                at = argv.index("-m")
                argv[at : at + 2] = model_args
            argv = [str(cli_bin / "chainform"), *argv[1:]]
        done = subprocess.run(argv, cwd=workdir, capture_output=True, text=True, timeout=3000)
        assert done.returncode == 0, (line, done.stderr)
        found = re.search(r"eval: (\w+) \(", done.stderr)
        eval_id = eval_id or (found.group(1) if found else None)
        outputs.append(done.stdout)
    return outputs


def test_the_shell_block_on_the_emulator(tmp_path: Path, emulator: Emulator, cli_bin: Path) -> None:
    answers: dict[str, Any] = {}

    def answer(request: RecordedRequest) -> str:
        text = json.dumps(request.json)
        for doc_text, expected in answers.items():
            if json.dumps(doc_text)[1:-1] in text:
                return json.dumps(expected)
        raise AssertionError("a document the set does not have")

    commands = shell_commands(DOC)
    assert "-m local" in commands[1]
    emulator.default = answer
    model = ["-m", "openai/gpt-4.1-mini", "--base-url", emulator.base_url + "/v1", "--key", "sk-test"]
    run_block(commands[:1], tmp_path, 3, model, cli_bin)
    for line in (tmp_path / "invoices" / "invoices.jsonl").read_text().splitlines():
        row = json.loads(line)
        answers[row["text"]] = row["expected"]
    _made, evaluated, shown, compared = run_block(commands, tmp_path, 3, model, cli_bin)
    assert "9/9" in evaluated and "9/9" in shown and "rows right" in shown  # 3 rows, 3 runs each
    assert "+0.0% of rows right" in compared
    page = (tmp_path / "report.html").read_text()
    assert "<svg id='plot'" in page


def test_readme_shows_the_eval_block() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert shell_commands(readme)[:2] == shell_commands(DOC)[:2]


@pytest.mark.integration
def test_the_shell_block_on_the_embedded_model(tmp_path: Path, cli_bin: Path) -> None:
    """The block as printed on real SmolLM2, on one document run once: the emulator test above
    proves the counts and repeats; this one that every line works on the embedded model (each
    further document or repeat is another minute of CPU and proves nothing more)."""
    _made, evaluated, shown, compared = run_block(shell_commands(DOC), tmp_path, 1, None, cli_bin, repeat=1)
    assert "local / native" in evaluated and "local / deferred" in evaluated and "rows right" in shown
    assert "McNemar" in compared
