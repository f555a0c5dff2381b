"""`map`'s old `-o FILE` spelling of the output file. `-o KEY VALUE` is a model option on every
command now, the output file is `--output FILE`; a command line written for the old spelling still
runs, with a deprecation warning.

The rule (docs/cli.md): when the line has no `--output`, its first `-o` (or `-oFILE`) that is not
the value of another option is the old spelling of `--output`, unless what follows it is a model
option's name (`-o temperature 0.2` without `--output` is a missing `--output`, not a file named
"temperature"). With `--output` on the line, every `-o` is `KEY VALUE`.
"""

from __future__ import annotations

import click

DEPRECATION = (
    "Warning: `map -o FILE` is deprecated: write --output FILE (-o KEY VALUE is a model option, "
    "as on every command)"
)


def _values_taken(command: click.Command) -> dict[str, int]:
    """How many values each option of `command` takes (-1: one, unless an option follows)."""
    taken: dict[str, int] = {}
    for param in command.params:
        if isinstance(param, click.Option):
            count = 0 if param.is_flag or param.count else param.nargs
            count = -1 if not param.is_flag and isinstance(param.flag_value, str) else count
            for name in (*param.opts, *param.secondary_opts):
                taken[name] = count
    return taken


def _is_option_name(value: str) -> bool:
    from chainform.cli._options import OPTION_ALIASES
    from chainform.types._options import OPTION_NAMES

    return value in OPTION_NAMES or value in OPTION_ALIASES


def old_output_spelling(command: click.Command, args: list[str]) -> list[str]:
    """`args` with an old `-o FILE` written as `--output FILE` (and the warning said), else as given."""
    end = args.index("--") if "--" in args else len(args)
    if any(arg == "--output" or arg.startswith("--output=") for arg in args[:end]):
        return args
    taken = _values_taken(command)
    index = 0
    while index < end:
        arg = args[index]
        if (arg == "-o" and index + 1 < end) or (arg.startswith("-o") and len(arg) > 2):
            attached = arg != "-o"
            value = arg[2:] if attached else args[index + 1]
            if _is_option_name(value):
                return args
            click.echo(DEPRECATION, err=True)
            return [*args[:index], "--output", value, *args[index + (1 if attached else 2) :]]
        count = taken.get(arg.split("=", 1)[0], 0) if arg.startswith("-") and "=" not in arg else 0
        if count == -1:
            count = int(index + 1 < end and not args[index + 1].startswith("-"))
        index += 1 + count
    return args


__all__ = ["DEPRECATION", "old_output_spelling"]
