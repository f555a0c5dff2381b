"""What `map` and `eval` show while they run: the loading of an in-process model as a step of its
own (before any row), and eval's bar per cell (rows, right so far, cost, ETA). On a terminal
only: a pipe or a file gets none of it (the summary lines are said either way)."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

import click

from chainform.cli import _output
from chainform.cli._money import cost_text

if TYPE_CHECKING:
    from chainform.evals._report import RowResult


def load_step(command: str, name: str, client: Any) -> None:
    """Load an in-process model's weights now, said as a step (`map: loading model local...`), so
    that the bar that follows counts rows, not the load. A remote model has nothing to load."""
    load = getattr(client, "load", None)
    if not callable(load):
        return
    shown = _output.stderr_is_terminal()
    if shown:
        click.echo(f"{command}: loading model {name}...", err=True, nl=False)
    load()
    if shown:
        click.echo(" loaded", err=True)


class EvalBars:
    """One bar per cell of an eval, on stderr when it is a terminal (an `EvalProgress`)."""

    def __init__(self) -> None:
        self._progress: Any = None
        self._tasks: dict[int, Any] = {}
        self._right: dict[int, int] = {}
        self._cost: dict[int, Decimal | None] = {}

    def __enter__(self) -> EvalBars:
        if _output.stderr_is_terminal():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            from chainform.cli._output import console

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("rows, {task.fields[right]} right, {task.fields[cost]}"),
                TimeRemainingColumn(),
                console=console(err=True),
            )
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def cell(self, index: int, name: str, rows: int, done: int) -> None:
        self._right[index] = 0
        self._cost[index] = Decimal(0)
        if self._progress is not None:
            self._tasks[index] = self._progress.add_task(
                name, total=rows, completed=done, right=0, cost=cost_text(Decimal(0))
            )

    def row(self, index: int, result: RowResult) -> None:
        self._right[index] += result.right
        cost = self._cost[index]
        self._cost[index] = (
            cost + Decimal(result.cost) if cost is not None and result.cost is not None else None
        )
        if self._progress is not None:
            self._progress.update(
                self._tasks[index], advance=1, right=self._right[index], cost=cost_text(self._cost[index])
            )


__all__ = ["EvalBars", "load_step"]
