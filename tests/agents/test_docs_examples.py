"""The code blocks marked '# runnable' in docs/agents.md and docs/mcp.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCKS = [
    pytest.param(code, id=f"{name}#{i}")
    for name in ("agents.md", "mcp.md")
    for i, code in enumerate(re.findall(r"```python\n(# runnable.*?)```", (DOCS / name).read_text(), re.S))
]


@pytest.mark.parametrize("code", BLOCKS)
def test_runnable_doc_example(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(code, "<docs>", "exec"), {"__name__": "__docs__"})
    assert capsys.readouterr().out.strip()


def test_both_docs_have_runnable_examples() -> None:
    assert {p.id.split("#")[0] for p in BLOCKS} == {"agents.md", "mcp.md"}
