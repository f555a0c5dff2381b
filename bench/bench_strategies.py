"""Output strategies on a small task set (tools + schema): success, model calls and tokens.

Each task needs one or two tool calls and ends in a pydantic schema. Models:
- "scripted-good": a ScriptedClient that calls the right tools and answers validly at once;
- "scripted-sloppy": first sends a tool call with broken JSON arguments, and its first answer in
  each chain is invalid (truncated JSON, a wrong type, or prose instead of JSON), then complies;
- "local": the embedded model (chainform.local), on the first few tasks, when it is installed.
Every strategy is forced (native, tool, prompted, deferred) so they can be compared.

    python bench/bench_strategies.py [--models scripted-good,scripted-sloppy,local --out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).parent))
from _common import emit, versions

STRATEGIES = ("native", "tool", "prompted", "deferred")


def get_weather(city: str) -> dict[str, Any]:
    """Current weather for a city."""
    return {"city": city, "temp_c": {"Paris": 21.5, "Rome": 26.0}.get(city, 15.0), "sky": "sunny"}


def convert_currency(amount: float, source: str, target: str) -> dict[str, Any]:
    """Convert an amount between currencies (ISO codes, e.g. EUR, USD)."""
    return {"amount": round(amount * 1.1, 2), "currency": target}


def population(country: str) -> int:
    """Population of a country."""
    return {"France": 68_000_000}.get(country, 1_000_000)


def stock_trend(symbol: str) -> str:
    """Price trend of a stock ticker over the last week."""
    return f"{symbol}: 101.2, 102.8, 104.1 (rising)"


class Weather(BaseModel):
    city: str
    temp_c: float


class Money(BaseModel):
    amount: float
    currency: str


class Population(BaseModel):
    country: str
    population: int


class Trend(BaseModel):
    symbol: str
    trend: Literal["up", "down", "flat"]


class Warmer(BaseModel):
    warmer_city: str
    difference_c: float


@dataclass
class Task:
    name: str
    prompt: str
    tools: list[Callable[..., Any]]
    schema: type[BaseModel]
    calls: list[tuple[str, dict[str, Any]]]
    answer: dict[str, Any]


TASKS = [
    Task("weather", "What is the weather in Paris?", [get_weather], Weather,
         [("get_weather", {"city": "Paris"})], {"city": "Paris", "temp_c": 21.5}),
    Task("currency", "Convert 100 EUR to USD.", [convert_currency], Money,
         [("convert_currency", {"amount": 100, "source": "EUR", "target": "USD"})],
         {"amount": 110.0, "currency": "USD"}),
    Task("population", "How many people live in France?", [population], Population,
         [("population", {"country": "France"})], {"country": "France", "population": 68_000_000}),
    Task("trend", "Is AAPL going up, down or flat this week?", [stock_trend], Trend,
         [("stock_trend", {"symbol": "AAPL"})], {"symbol": "AAPL", "trend": "up"}),
    Task("warmer", "Which is warmer, Paris or Rome, and by how much?", [get_weather], Warmer,
         [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})],
         {"warmer_city": "Rome", "difference_c": 4.5}),
]  # fmt: skip


def _invalid(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer with its first field given the wrong type."""
    key = next(iter(answer))
    return {**answer, key: [answer[key]]}


def scripted_policy(task: Task, sloppy: bool) -> Callable[[list[Any], Any], Any]:
    """A model as a function of the request, so every strategy gets a fitting reply."""
    from chainform.testing import tool_call
    from chainform.types import FunctionResultContent, ToolMode

    state = {"answers": 0, "broken_call_sent": False}
    names = {n for n, _ in task.calls}

    def reply(messages: list[Any], options: Any) -> Any:
        offered = {t.name for t in options.tools or []}
        results = [c for m in messages for c in m.contents if isinstance(c, FunctionResultContent)]
        task_results = [r for r in results if r.name in names and not r.error]
        mode = options.tool_mode or ToolMode()
        forced_output = mode.mode == "required" and mode.function_name == "final_result"
        if (
            names & offered
            and mode.mode != "none"
            and not forced_output
            and len(task_results) < len(task.calls)
        ):
            if sloppy and not state["broken_call_sent"]:
                state["broken_call_sent"] = True
                return tool_call(task.calls[0][0], _raw='{"' + next(iter(task.calls[0][1])) + '": ')
            return [tool_call(n, **args) for n, args in task.calls]
        fmt = options.response_format
        native = fmt is not None and fmt.kind == "json_schema"
        prompted = not native and any("JSON Schema" in m.text for m in messages)
        if native or "final_result" in offered or prompted:
            state["answers"] += 1  # only answers that must match the schema
        bad = sloppy and state["answers"] == 1
        if native:
            return json.dumps(task.answer)[:-5] if bad else json.dumps(task.answer)
        if "final_result" in offered:
            return tool_call("final_result", **(_invalid(task.answer) if bad else task.answer))
        if prompted:
            if bad:
                return "Sure! The answer is in the tool results above."
            return f"Here you go:\n```json\n{json.dumps(task.answer)}\n```"
        return f"Answer in words: {task.answer}."

    return reply


def run_chain(model: Any, task: Task, strategy: str, **kwargs: Any) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        chain = model.chain(
            task.prompt, tools=task.tools, schema=task.schema, strategy=strategy, log=False, **kwargs
        )
        value = chain.value
        ok, error = True, None
        correct = value.model_dump() == task.answer
    except Exception as exc:  # chainform's errors keep every model call made before the failure
        ok, correct, error = False, False, f"{type(exc).__name__}: {str(exc)[:200]}"
        calls_made = list(getattr(exc, "responses", []) or [])
    else:
        calls_made = list(chain.responses)
    tokens = sum((getattr(c, "usage", None) and c.usage.total_tokens) or 0 for c in calls_made)
    return {
        "task": task.name, "strategy": strategy, "ok": ok, "correct": correct, "calls": len(calls_made),
        "tokens": tokens, "seconds": round(time.perf_counter() - t0, 3), "error": error,
    }  # fmt: skip


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for strategy in STRATEGIES:
        rows = [r for r in runs if r["strategy"] == strategy]
        if rows:
            out[strategy] = {
                "tasks": len(rows),
                "success": sum(r["ok"] for r in rows),
                "correct": sum(r["correct"] for r in rows),
                "model_calls": sum(r["calls"] for r in rows),
                "tokens": sum(r["tokens"] for r in rows),
                "seconds": round(sum(r["seconds"] for r in rows), 2),
            }
    return out


def scripted(sloppy: bool) -> list[dict[str, Any]]:
    import chainform as cf
    from chainform.testing import ScriptedClient

    runs = []
    for task in TASKS:
        for strategy in STRATEGIES:
            client = ScriptedClient([scripted_policy(task, sloppy)] * 12)
            runs.append(run_chain(cf.Model(client), task, strategy))
    return runs


def local(tasks: int, max_tokens: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    import chainform as cf

    t0 = time.perf_counter()
    model = cf.get_model("local", max_output_tokens=max_tokens)
    runs = []
    for task in TASKS[:tasks]:
        for strategy in STRATEGIES:
            runs.append(run_chain(model, task, strategy, chain_limit=3, validation_retries=1))
    return runs, {
        "tasks": tasks,
        "max_output_tokens": max_tokens,
        "total_seconds": round(time.perf_counter() - t0, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="scripted-good,scripted-sloppy,local")
    parser.add_argument("--local-tasks", type=int, default=2)
    parser.add_argument("--local-max-tokens", type=int, default=64)
    parser.add_argument("--out")
    args = parser.parse_args()
    result: dict[str, Any] = {
        "tasks": [t.name for t in TASKS],
        "models": {},
        "versions": versions("chainform", "torch", "transformers", "llguidance"),
    }
    for name in args.models.split(","):
        try:
            if name == "local":
                runs, info = local(args.local_tasks, args.local_max_tokens)
                result["models"][name] = {"summary": summarise(runs), "runs": runs, **info}
            else:
                runs = scripted(sloppy=name == "scripted-sloppy")
                result["models"][name] = {"summary": summarise(runs), "runs": runs}
        except Exception as exc:  # e.g. the embedded model is not installed: say so, keep the rest
            result["models"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
    emit(result, args.out)


if __name__ == "__main__":
    main()
