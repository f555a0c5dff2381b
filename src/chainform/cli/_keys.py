"""`chainform keys`: store provider API keys in the user's keys file (mode 0600)."""

from __future__ import annotations

import sys

import click


@click.group(name="keys", invoke_without_command=True)
@click.pass_context
def keys_command(ctx: click.Context) -> None:
    """Manage stored API keys (an environment variable or --key still wins); bare `keys` lists
    the names that have a key, as `keys list` does."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(keys_list)


@keys_command.command(name="set")
@click.argument("name")
@click.option("--value", help="The key (omit to be asked for it without echo).")
def keys_set(name: str, value: str | None) -> None:
    """Store the key for NAME (e.g. openai, anthropic, gemini)."""
    from chainform.keys import set_key

    if value is None:
        value = _read_key()
    try:
        set_key(name, value.strip())
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    click.echo(f"Key for {name!r} saved.", err=True)


def _read_key() -> str:
    """The key typed without echo on a terminal, else the first line piped on stdin (getpass
    would warn that it cannot hide input, and abort at end of input)."""
    if sys.stdin.isatty():
        value: str = click.prompt("Enter key", hide_input=True, err=True)
        return value
    line = sys.stdin.readline()
    if not line.strip():
        raise click.UsageError("no key given: stdin is empty; pass --value KEY or pipe the key in")
    return line


@keys_command.command(name="path")
def keys_path_command() -> None:
    """Print where keys are stored."""
    from chainform.keys import keys_path

    click.echo(str(keys_path()))


@keys_command.command(name="list")
def keys_list() -> None:
    """Print the names that have a stored key (never the keys)."""
    from chainform.keys import stored_key_names

    for name in stored_key_names():
        click.echo(name)


@keys_command.command(name="get")
@click.argument("name")
@click.option("--reveal", is_flag=True, help="Print the whole key on a terminal too.")
def keys_get(name: str, reveal: bool) -> None:
    """Print the stored key for NAME, e.g. `export OPENAI_API_KEY=$(chainform keys get openai)`.
    On a terminal only its last four characters are shown unless --reveal is given."""
    from chainform.errors import MissingKeyError
    from chainform.keys import stored_key

    value = stored_key(name)
    if value is None:
        raise MissingKeyError(
            f"no stored key for {name!r} (see `chainform keys list`; `chainform keys set {name}`)"
        )
    if _stdout_is_terminal() and not reveal:
        click.echo(f"...{value[-4:]}" if len(value) > 11 else "...")
        click.echo("The whole key is printed into a pipe or with --reveal.", err=True)
        return
    click.echo(value)


def _stdout_is_terminal() -> bool:
    return sys.stdout.isatty()
