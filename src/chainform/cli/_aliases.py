"""`chainform aliases`: short names of your own for models (as llm's `aliases`), saved in
`<home>/aliases.json` and honoured wherever a model name is (`-m`, `--fallback`, `get_model`)."""

from __future__ import annotations

import click

from chainform.cli._output import echo_json


@click.group(name="aliases", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Output the aliases as JSON.")
@click.pass_context
def aliases_command(ctx: click.Context, as_json: bool) -> None:
    """Your model aliases (also `aliases list`); `aliases set NAME MODEL` makes one."""
    if ctx.invoked_subcommand is None:
        _print(as_json)


@aliases_command.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Output the aliases as JSON.")
def aliases_list(as_json: bool) -> None:
    """List your aliases (the built-in ones are in `chainform models`)."""
    _print(as_json)


def _print(as_json: bool) -> None:
    from chainform.clients.registry import user_aliases

    saved = dict(sorted(user_aliases().items()))
    if as_json:
        echo_json(saved)
        return
    width = max((len(name) for name in saved), default=0)
    for name, target in saved.items():
        click.echo(f"{name.ljust(width)} : {target}")


@aliases_command.command(name="set")
@click.argument("alias")
@click.argument("model")
@click.pass_context
def aliases_set(ctx: click.Context, alias: str, model: str) -> None:
    """Make ALIAS stand for MODEL (a model name or another alias). A name that is already a model,
    a provider, a built-in alias or a command is refused."""
    from chainform.clients.registry import save_user_alias

    commands = getattr(ctx.find_root().command, "commands", {})
    if alias.strip() in commands:
        raise click.UsageError(
            f"the alias {alias.strip()!r} would shadow the command `chainform {alias.strip()}`"
        )
    try:
        reached = save_user_alias(alias, model)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"Alias {alias.strip()!r} -> {reached}", err=True)


@aliases_command.command(name="remove")
@click.argument("alias")
def aliases_remove(alias: str) -> None:
    """Forget ALIAS."""
    from chainform.clients.registry import remove_user_alias

    if not remove_user_alias(alias):
        raise click.UsageError(f"no alias {alias.strip()!r} (see `chainform aliases list`)")
    click.echo(f"Alias {alias.strip()!r} removed.", err=True)
