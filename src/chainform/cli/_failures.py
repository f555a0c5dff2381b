"""Failed rows of `map` and `eval`: `--allow-failures` (a count or a ratio), the summary of the
failures by kind on stderr, and the ROWS_FAILED exit when more rows failed than allowed; and the
check, before any call, that a prompt template names only fields the first row has."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click

from chainform.cli._exit import ExitCode, exit_with
from chainform.cli._output import echo_untrusted

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Allowance:
    """How many failed rows a run may have and still exit 0: at most `count` rows, or at most
    `ratio` (0..1) of the rows it ran."""

    count: int = 0
    ratio: float | None = None

    def allows(self, failed: int, total: int) -> bool:
        if self.ratio is not None:
            return failed <= self.ratio * total
        return failed <= self.count

    def __str__(self) -> str:
        return f"{self.ratio:.0%}" if self.ratio is not None else str(self.count)


class AllowanceParam(click.ParamType[Allowance]):
    """`--allow-failures N` (rows), `--allow-failures 0.1` or `10%` (a share of the rows run)."""

    name = "N|RATIO"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Allowance:
        if isinstance(value, Allowance):
            return value
        text = str(value).strip()
        try:
            if text.endswith("%"):
                ratio = float(text[:-1]) / 100
            elif text.isdigit():
                return Allowance(count=int(text))
            else:
                ratio = float(text)
        except ValueError:
            self.fail(
                f"{value!r}: give a number of rows (3), a ratio (0.1) or a percentage (10%)", param, ctx
            )
        if not 0 <= ratio <= 1:  # also refuses nan
            self.fail(f"{value!r}: a ratio is from 0 to 1 (a percentage from 0% to 100%)", param, ctx)
        return Allowance(ratio=ratio)


def allow_failures_option(command: F) -> F:
    return click.option(
        "--allow-failures",
        "allowance",
        type=AllowanceParam(),
        default="0",
        show_default=True,
        help="Failed rows that still exit 0: a count (3), a ratio (0.1) or a percentage (10%) of the rows run.",
    )(command)


@dataclass
class Failures:
    """Failed rows by kind (the row error's phase), with the first message of each kind."""

    kinds: Counter[str] = field(default_factory=Counter)
    first: dict[str, str] = field(default_factory=dict)

    def add(self, kind: str, message: str) -> None:
        self.kinds[kind] += 1
        self.first.setdefault(kind, message)

    @property
    def count(self) -> int:
        return sum(self.kinds.values())

    def text(self) -> str:
        return "; ".join(f"{kind} {n} (e.g. {self.first[kind]})" for kind, n in self.kinds.most_common())

    def say(self, command: str, total: int) -> None:
        """One stderr line: how many rows failed, by kind (nothing when none did)."""
        if self.count:
            echo_untrusted(f"{command}: {self.count} of {total} rows failed: {self.text()}", err=True)

    def finish(self, command: str, total: int, allowance: Allowance) -> None:
        """Say what failed (stderr) and end with ROWS_FAILED when more failed than `allowance`."""
        self.say(command, total)
        if not self.count or allowance.allows(self.count, total):
            return
        click.echo(
            f"{command}: exit {int(ExitCode.ROWS_FAILED)}: more rows failed than --allow-failures {allowance} allows",
            err=True,
        )
        raise exit_with(ExitCode.ROWS_FAILED)


def check_fields(
    templates: Iterable[str | None], items: Iterable[Any], *, ignore: str | None = None
) -> Iterator[Any]:
    """`items` again, after checking that every template names only fields of the first row (the
    first that is a row at all: a broken line is that row's own error). A usage error (exit 2)
    before any call otherwise."""
    from chainform._map._inputs import check_template, record_of

    iterator = iter(items)
    head: list[Any] = []
    for item in iterator:
        head.append(item)
        if isinstance(item, str | dict):
            fields = set(record_of(item)) - {ignore}
            for template in templates:
                if template is None:
                    continue
                missing = [name for name in check_template(template) if name not in fields]
                if missing:
                    names = ", ".join(f"{{{name}}}" for name in missing)
                    have = ", ".join(sorted(fields)) or "none"
                    raise click.BadParameter(
                        f"the template names {names}, which the first row does not have (its fields: {have})",
                        param_hint="--prompt",
                    )
            break
    return itertools.chain(head, iterator)


__all__ = ["Allowance", "AllowanceParam", "Failures", "allow_failures_option", "check_fields"]
