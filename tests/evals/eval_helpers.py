"""An invoice schema, six rows with their answers, and scripted models whose answers are right for a
known subset of rows and fields (the tests compute every figure of the report from this table)."""

from __future__ import annotations

import json
import re
from typing import Any

from chainform.models import Model
from chainform.testing import ScriptedClient
from chainform.types import ChatResponse, Message, UsageDetails

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "vendor": {"type": "string"},
        "total": {"type": "number"},
        "currency": {"enum": ["EUR", "USD"]},
        "date": {"type": "string", "format": "date"},
        "paid": {"type": ["boolean", "null"]},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "qty": {"type": "integer"}},
                "required": ["name", "qty"],
            },
        },
    },
    "required": ["total", "currency", "date", "paid", "items"],
}
PROMPT = "Extract the invoice: {text}"
ROWS = 6


def expected(n: int) -> dict[str, Any]:
    return {
        "vendor": f"Shop {n}",
        "total": 100.0 + n,
        "currency": "EUR",
        "date": f"2024-03-0{n + 1}",
        "paid": n % 2 == 0,
        "items": [{"name": "pen", "qty": n + 1}, {"name": "ink", "qty": 1}],
    }


def rows() -> list[dict[str, Any]]:
    return [{"text": f"invoice {n}", "expected": expected(n)} for n in range(ROWS)]


def sloppy(n: int) -> Any:
    """The 'bad' model: rows 0 and 1 right (cosmetically different), 2 total off 5%, 3 wrong currency
    and one item short, 4 never valid JSON, 5 paid null and vendor missing."""
    answer = expected(n)
    if n == 0:
        answer["vendor"] = "  shop 0 "
        answer["items"] = list(reversed(answer["items"]))
    elif n == 1:
        answer["total"] = 101 * 1.005
    elif n == 2:
        answer["total"] = 102 * 1.05
    elif n == 3:
        answer["currency"] = "USD"
        answer["items"] = answer["items"][:1]
    elif n == 4:
        return "no JSON here"
    elif n == 5:
        answer["paid"] = None
        del answer["vendor"]
    return answer


def row_number(messages: list[Message]) -> int:
    first_user = next(m for m in messages if m.role == "user")
    return int(re.search(r"invoice (\d+)", first_user.text).group(1))  # type: ignore[union-attr]


class Script:
    """Answers each call from `answer(n)`; every call costs 100 input tokens; counts calls per row."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls: dict[int, int] = {}

    def __call__(self, messages: list[Message], options: Any) -> ChatResponse:
        n = row_number(messages)
        self.calls[n] = self.calls.get(n, 0) + 1
        reply = self.answer(n)
        text = reply if isinstance(reply, str) else json.dumps(reply)
        return ChatResponse(
            [Message("assistant", text)], usage_details=UsageDetails(input_tokens=100, output_tokens=0)
        )


def scripted(name: str, answer: Any, calls: int = 200) -> tuple[Model, Script]:
    script = Script(answer)
    return Model(ScriptedClient([script] * calls), name=name), script


def two_cells(**kwargs: Any) -> tuple[Any, Script, Script]:
    """The 'bad' and 'good' models over the six rows (priced at $1 a call by the caller): the
    report, and the two scripts (which count the calls per row)."""
    import chainform as cf

    bad, bad_script = scripted("bad", sloppy)
    good, good_script = scripted("good", expected)
    report = cf.evaluate(
        rows(),
        schema=SCHEMA,
        prompt=PROMPT,
        models=[bad, good],
        strategies=["native"],
        tolerance={"total": 0.01},
        concurrency=2,
        **kwargs,
    )
    return report, bad_script, good_script


def two_cell_report(**kwargs: Any) -> Any:
    return two_cells(**kwargs)[0]
