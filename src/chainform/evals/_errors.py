"""The one error an eval raises for bad input, before any model is called."""

from __future__ import annotations

from chainform.errors import ChainformError, ChainInterruptedError


class EvalInputError(ChainformError, ValueError):
    """Bad eval input (a row without its expected answer, an expected answer the schema refuses, an
    unknown field in a tolerance or scorer, a judge with no key): the CLI prints it as one line and
    exits 2."""


class EvalInterruptedError(ChainInterruptedError):
    """Ctrl-C (or a tool's KeyboardInterrupt) stopped the eval `eval_id`: the rows that finished are
    kept, and the same eval with `resume=True` (`--resume`) runs the rest (the CLI exits 130)."""

    def __init__(self, eval_id: str) -> None:
        super().__init__(
            f"eval {eval_id} interrupted; the rows that finished are kept. "
            "Run the same command with --resume to continue."
        )
        self.eval_id = eval_id


__all__ = ["EvalInputError", "EvalInterruptedError"]
