"""`chainform --help` starts fast: no provider SDK, torch or transformers is imported."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("openai", "anthropic", "google.genai", "boto3", "torch", "transformers", "llguidance", "rich")

PROBE = """
import json, sys
from chainform.cli import cli
for args in (["--help"], ["prompt", "--help"], ["logs", "--help"], ["--version"]):
    try:
        cli(args, prog_name="chainform", standalone_mode=False)
    except SystemExit:
        pass
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {h.split('.')[0] for h in HEAVY}
                        and any(m == h or m.startswith(h + '.') for h in HEAVY))))
"""


def test_cli_help_imports_nothing_heavy(tmp_path) -> None:
    code = f"HEAVY = {HEAVY!r}\n" + PROBE
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={"CHAINFORM_HOME": str(tmp_path), "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == []
    assert "Usage: chainform" in done.stdout
