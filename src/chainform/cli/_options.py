"""Option declarations the commands share: one definition of `-m`, `--strategy` and
`--chain-limit` for `chainform` and `chainform map`, and the two shapes most options take (a
bounded count, a choice), their default shown in `--help`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

STRATEGY_CHOICES = ("auto", "native", "tool", "prompted", "deferred")
CONTEXT_CHOICES = ("full", "compact", "last")


def count_option(*decls: str, minimum: int, default: int, help: str | None = None) -> Callable[[F], F]:
    """An integer option of at least `minimum`."""
    return click.option(
        *decls, type=click.IntRange(min=minimum), default=default, show_default=True, help=help
    )


def choice_option(
    *decls: str, choices: Sequence[str], default: str, help: str | None = None
) -> Callable[[F], F]:
    """An option among `choices`."""
    return click.option(
        *decls, type=click.Choice(list(choices)), default=default, show_default=True, help=help
    )


def model_name_value(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`-m NAME`: an empty or blank name is a usage error, not the default model."""
    if value is not None and not value.strip():
        raise click.BadParameter("the model name is empty (leave -m out for the default model)")
    return value


def model_option(help: str) -> Callable[[F], F]:
    """`-m/--model NAME`."""
    return click.option("-m", "--model", "model_name", callback=model_name_value, help=help)


strategy_option = choice_option(
    "--strategy", choices=STRATEGY_CHOICES, default="auto", help="How the schema is enforced."
)
chain_limit_option = count_option(
    "--cl", "--chain-limit", "chain_limit", minimum=1, default=5, help="Most model calls in the tool phase."
)
