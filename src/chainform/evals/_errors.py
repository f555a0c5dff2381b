"""The one error an eval raises for bad input, before any model is called."""

from __future__ import annotations

from chainform.errors import ChainformError


class EvalInputError(ChainformError, ValueError):
    """Bad eval input (a row without its expected answer, an expected answer the schema refuses, an
    unknown field in a tolerance or scorer, a judge with no key): the CLI prints it as one line and
    exits 2."""


__all__ = ["EvalInputError"]
