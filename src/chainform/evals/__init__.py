"""Evals: is the schema-valid answer also right? `evaluate` runs a matrix of models x strategies x
prompts (each cell a `model.map` run) and scores every field from the schema; see docs/evals.md."""

from __future__ import annotations

from chainform.evals._errors import EvalInputError, EvalInterruptedError
from chainform.evals._eval_report import EvalReport
from chainform.evals._keep import load_report
from chainform.evals._leaves import Tolerance
from chainform.evals._plan import Options, Scorer, compile_plan
from chainform.evals._report import Cell, FieldFigures, RowResult
from chainform.evals._rescore import rescore
from chainform.evals._run import MAX_ROWS, evaluate
from chainform.evals._score import Outcome, score

__all__ = [
    "MAX_ROWS",
    "Cell",
    "EvalInputError",
    "EvalInterruptedError",
    "EvalReport",
    "FieldFigures",
    "Options",
    "Outcome",
    "RowResult",
    "Scorer",
    "Tolerance",
    "compile_plan",
    "evaluate",
    "load_report",
    "rescore",
    "score",
]
