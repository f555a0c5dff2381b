"""A fast start: `chainform --help`, `--version` and argument errors import click, click-default-group
and the CLI skeleton only; `import chainform` defers everything else (PEP 562)."""

from __future__ import annotations

import json
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
SKELETON = {"chainform", "chainform.cli"}


def _imported(tmp_path, probe: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        env={"CHAINFORM_HOME": str(tmp_path), "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_cli_help_version_and_usage_errors_import_only_click_and_the_skeleton(tmp_path) -> None:
    loaded = _imported(tmp_path, f"ARGS = {ARGS!r}\n" + PROBE)
    third_party = {m.split(".")[0] for m in loaded if not m.startswith("chainform")}
    # pydantic_core (+ typing_extensions) come from `schemas --dialect`'s Choice built from
    # chainform.types.SchemaDialect at import time; still no SDK, torch, rich or pydantic models.
    assert third_party <= {"click", "click_default_group", "pydantic_core", "typing_extensions"}, third_party
    ours = {m for m in loaded if m.startswith("chainform")}
    allowed = {m for m in ours if m.startswith(("chainform.cli._", "chainform.types", "chainform._json"))}
    assert ours - SKELETON - allowed <= {"chainform.errors"}, ours
    assert not any(m.startswith(("chainform.models", "chainform.clients", "chainform.store")) for m in ours)


def test_import_chainform_defers_heavy_modules(tmp_path) -> None:
    probe = (
        "import json, sys\nbefore = set(sys.modules)\nimport chainform\nchainform.__version__\n"
        "print(json.dumps(sorted(m for m in set(sys.modules) - before"
        " if m.split('.')[0] not in sys.stdlib_module_names)))"
    )
    assert _imported(tmp_path, probe) == ["chainform"]
    probe = "import json, sys\nimport chainform as cf\ncf.Model\nprint(json.dumps(sorted(sys.modules)))"
    loaded = _imported(tmp_path, probe)
    assert "chainform.models" in loaded
    assert not {"openai", "anthropic", "torch", "transformers", "rich"} & {m.split(".")[0] for m in loaded}
