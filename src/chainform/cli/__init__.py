"""The `chainform` command. Only click is imported up front: `chainform --help` stays fast and
never loads provider SDKs, torch or transformers (each command imports what it needs)."""

from __future__ import annotations

import os
import sys
import warnings

from chainform.cli._aliases import aliases_command
from chainform.cli._chat import chat_command
from chainform.cli._eval import eval_group
from chainform.cli._fragments import fragments_command
from chainform.cli._group import cli, warning_line
from chainform.cli._keys import keys_command
from chainform.cli._local import local_command
from chainform.cli._logs import logs_command
from chainform.cli._map import map_command
from chainform.cli._mcp import mcp_group
from chainform.cli._models import models_command
from chainform.cli._money import logs_cost
from chainform.cli._prompt import prompt_command
from chainform.cli._resume import resume_command
from chainform.cli._schemas import schemas_command
from chainform.cli._templates import templates_command
from chainform.cli._tools import tools_command

logs_command.add_command(logs_cost)

for _command in (
    prompt_command,
    logs_command,
    schemas_command,
    models_command,
    tools_command,
    keys_command,
    local_command,
    map_command,
    mcp_group,
    eval_group,
    resume_command,
    aliases_command,
    templates_command,
    chat_command,
    fragments_command,
):
    cli.add_command(_command)


def main() -> None:
    """Console-script entry point."""
    warnings.formatwarning = warning_line  # also for warnings outside a command (while loading)
    if sys.stdin is None:  # started with descriptor 0 closed (`chainform ... <&-`): an empty stdin
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 (the process's stdin until it exits)
    cli(prog_name="chainform")


__all__ = ["cli", "main"]
