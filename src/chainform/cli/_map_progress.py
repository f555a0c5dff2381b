"""The progress of a `chainform map` run: the counts behind its progress bar and its summary line."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from chainform.cli import _output
from chainform.cli._failures import Failures
from chainform.cli._money import cost_text
from chainform.cli._output import shorten

if TYPE_CHECKING:
    from chainform.map import MapResult


class Tracker:
    """Counts for the progress bar (terminal) and the summary line (always, on stderr)."""

    def __init__(self, total: int | None, skipped: int, retried: int = 0) -> None:
        self.total = total
        self.skipped = skipped
        self.retried = retried
        self.done = 0
        self.failed = 0
        self.failures = Failures()
        self.tokens = 0
        self.cost: Decimal | None = Decimal(0)
        self.unpriced: str | None = None  # why a row's cost is unknown: said once, in the summary
        self.budget: Any = None
        self.batch: Any = None  # the batch run's RoundStats, when --batch
        self.started = time.monotonic()
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> Tracker:
        if _output.stderr_is_terminal():
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            from chainform.cli._output import console

            self._progress = Progress(
                BarColumn(),
                TextColumn("{task.completed}/{task.total} done"),
                TextColumn("[red]{task.fields[failed]} failed"),
                TextColumn("{task.fields[rate]:.1f} rows/s"),
                TextColumn("{task.fields[tokens]} tokens"),
                TextColumn("{task.fields[cost]}"),
                TextColumn("{task.fields[batch]}"),
                TimeRemainingColumn(),
                console=console(err=True),
            )
            self._progress.start()
            self._task = self._progress.add_task(
                "map",
                total=self.total,
                completed=self.skipped,
                failed=0,
                rate=0.0,
                tokens=0,
                cost="",
                batch="",
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    @property
    def rate(self) -> float:
        return self.done / max(time.monotonic() - self.started, 1e-9)

    def add(self, result: MapResult) -> None:
        self.done += 1
        if (
            result.error is not None and result.error.phase != "waiting"
        ):  # waiting: `chainform resume`, no failure
            self.failed += 1
            self.failures.add(
                result.error.phase, shorten(f"{result.error.type}: {result.error.message}", 120)
            )
        self.tokens += result.usage.total_tokens or 0
        cost = result.usage.cost
        self.cost = self.cost + cost if self.cost is not None and cost is not None else None
        self.unpriced = self.unpriced or (result.usage.cost_reason if cost is None else None)
        if self._progress is not None:
            self._progress.update(
                self._task,
                advance=1,
                failed=self.failed,
                rate=self.rate,
                tokens=self.tokens,
                cost=cost_text(self.cost),
            )

    def batch_changed(self, stats: Any) -> None:
        """A batch run's batches moved: the bar says the round, states and requests answered."""
        self.batch = stats
        if self._progress is not None:
            self._progress.update(self._task, batch=self.batch_text())

    def batch_text(self) -> str:
        stats = self.batch
        if stats is None:
            return ""
        text = f"round {stats.round}: {stats.status} ({stats.answered}/{stats.requests} answered)"
        text += f", {stats.unknown_ids} result line(s) of no request ignored" if stats.unknown_ids else ""
        return text + (
            f", {stats.duplicate_ids} request(s) answered twice sent again" if stats.duplicate_ids else ""
        )

    def summary(self, output: str, run_id: str) -> str:
        elapsed = time.monotonic() - self.started
        resumed = f", {self.skipped} already done" if self.skipped else ""
        resumed += f", {self.retried} earlier errors retried" if self.retried else ""
        capped = self.budget.summary() if self.budget is not None else ""
        return (
            f"map: {self.done} rows in {elapsed:.1f}s ({self.rate:.1f} rows/s): "
            f"{self.done - self.failed} ok, {self.failed} failed{resumed}; {self.tokens} tokens, "
            f"{cost_text(self.cost, self.unpriced)}; {output} (run {run_id})"
            + (f"\nmap: {capped}" if capped else "")
            + (
                f"\nmap: batch {self.batch_text()}, {self.batch.created} batch(es) created"
                if self.batch
                else ""
            )
        )
