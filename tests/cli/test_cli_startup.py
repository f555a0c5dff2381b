"""A fast start: `chainform --help`, `--version` and argument errors import click, click-default-group
and the CLI skeleton only; `import chainform` defers everything else (PEP 562)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, sys
before = set(sys.modules)
from chainform.cli import cli
for args in ARGS:
    try:
        cli(args, prog_name="chainform", standalone_mode=False)
    except SystemExit:
        pass
    except Exception as exc:  # click's usage errors in non-standalone mode
        print(type(exc).__name__)
new = set(sys.modules) - before
print(json.dumps(sorted(m for m in new if m.split(".")[0] not in sys.stdlib_module_names)))
"""

ARGS = [
    ["--help"],
    ["prompt", "--help"],
    ["logs", "--help"],
    ["map", "--help"],
    ["--version"],
    ["logs", "-n", "x"],
]
SKELETON = {"chainform", "chainform._version", "chainform.cli"}  # _version: the version string alone


def _imported(tmp_path, probe: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        # PYTHONPATH kept: the probe must load the chainform these tests run against
        env={"CHAINFORM_HOME": str(tmp_path), "PATH": "", "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_cli_help_version_and_usage_errors_import_only_click_and_the_skeleton(tmp_path) -> None:
    loaded = _imported(tmp_path, f"ARGS = {ARGS!r}\n" + PROBE)
    third_party = {m.split(".")[0] for m in loaded if not m.startswith("chainform")}
    assert third_party <= {"click", "click_default_group"}, third_party
    ours = {m for m in loaded if m.startswith("chainform")}
    # constants only: the dialect names, and the map's (its package alone: `--batch-wait`'s default)
    allowed = {m for m in ours if m.startswith("chainform.cli._")} | {
        "chainform._dialect_names",
        "chainform._map",
    }
    assert ours - SKELETON - allowed <= {"chainform.errors"}, ours
    assert not any(m.startswith(("chainform.types", "chainform.models", "chainform.store")) for m in ours)
    assert "asyncio" not in loaded_stdlib(tmp_path)


def loaded_stdlib(tmp_path) -> list[str]:
    """Every module `chainform --help` loads, the standard library's included."""
    probe = PROBE.replace('if m.split(".")[0] not in sys.stdlib_module_names', "")
    return _imported(tmp_path, f"ARGS = {[['--help']]!r}\n" + probe)


def test_import_chainform_defers_heavy_modules(tmp_path) -> None:
    probe = (
        "import json, sys\nbefore = set(sys.modules)\nimport chainform\nchainform.__version__\n"
        "print(json.dumps(sorted(m for m in set(sys.modules) - before"
        " if m.split('.')[0] not in sys.stdlib_module_names)))"
    )
    assert _imported(tmp_path, probe) == ["chainform", "chainform._version"]  # the version string alone
    probe = "import json, sys\nimport chainform as cf\ncf.Model\nprint(json.dumps(sorted(sys.modules)))"
    loaded = _imported(tmp_path, probe)
    assert "chainform.models" in loaded
    assert not {"openai", "anthropic", "torch", "transformers", "rich", "opentelemetry"} & {
        m.split(".")[0] for m in loaded
    }
