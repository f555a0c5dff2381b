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
    # constants only: the dialect names, the bounds the flags share with the API, and the map's
    # (its package alone: `--batch-wait`'s default)
    allowed = {m for m in ours if m.startswith("chainform.cli._")} | {
        "chainform._bounds",
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


STEPS = """
import json, sys
from click.testing import CliRunner
from chainform.cli import cli

def step(*args):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    print(json.dumps(sorted(sys.modules)))

step("logs", "-n", "1")
step("logs", "-n", "1", "--json")
step("models")
step("-m", "anthropic/claude-haiku-4-5", "--key", "a-test", "--base-url", URL, "hi")
step("-m", "openai/gpt-4.1-mini", "--key", "o-test", "--base-url", URL + "/v1", "hi")
"""
SDKS = {
    "openai",
    "anthropic",
    "google",
    "boto3",
    "botocore",
    "torch",
    "transformers",
    "onnxruntime_genai",
    "ray",
    "mcp",
}
# the URL download's client (httpx, and the rich and pygments its package imports); `models` draws with rich
NOT_FOR_A_PLAIN_PROMPT = {"httpx", "pygments"}


def test_each_command_imports_only_what_it_needs(tmp_path, emulator, run) -> None:
    """A command loads its own provider's SDK and nothing it does not use: `logs` and `models` no
    SDK, an Anthropic prompt not openai, a prompt without tools or URLs neither chainform.tools (the
    sandbox) nor httpx (the URL download's client); all in one fresh interpreter."""
    emulator.default = "Hello!"
    home = tmp_path / "home"  # the autouse fixture's home: `logs` reads the call logged here
    seeded = run("-m", "anthropic/claude-haiku-4-5", "--key", "a-test", "--base-url", emulator.base_url, "hi")
    assert seeded.exit_code == 0, seeded.output
    done = subprocess.run(
        [sys.executable, "-c", f"URL = {emulator.base_url!r}\n" + STEPS],
        capture_output=True,
        text=True,
        timeout=120,
        env={"CHAINFORM_HOME": str(home), "PATH": "", "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
    )
    assert done.returncode == 0, done.stderr
    steps = [set(json.loads(line)) for line in done.stdout.strip().splitlines()[-5:]]
    logs, logs_json, models, anthropic, openai = ({m.split(".")[0] for m in step} for step in steps)
    for loaded in (logs, logs_json, models):
        assert not loaded & (SDKS | {"httpx", "genai_prices"}), loaded & (SDKS | {"httpx", "genai_prices"})
    assert "rich" not in logs | logs_json  # `models` draws its table with rich
    assert anthropic & SDKS == {"anthropic"}
    assert openai & SDKS == {"anthropic", "openai"}
    assert not openai & NOT_FOR_A_PLAIN_PROMPT, openai & NOT_FOR_A_PLAIN_PROMPT
    assert not {m for m in steps[-1] if m.startswith("chainform.tools")}
