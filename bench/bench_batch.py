"""What the same 1,000-row map job costs live and through a batch API, from the usage the
calls reported: a tool chain per row (lookup, then the JSON answer: two model calls a row) against
the emulator, once with `model.map(...)` and once with `model.map(..., batch=True)`. The costs are
chainform's own `usage.cost` (genai-prices' live and batch prices for the model), summed over the
rows; the batch run's wall time is the emulator's (a batch takes a few polls, not 24 hours).

    .venv/bin/python bench/bench_batch.py [--rows 1000 --model openai/gpt-4.1-mini --out batch.json]

`--model` takes any provider with a batch API: `openai/...` (Files + Batches), `anthropic/...`
(Message Batches), `gemini/...` (Gemini's batch mode).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def lookup(order: int) -> dict[str, Any]:
    """Look an order up by its number."""
    return {"order": order, "total": order / 2}


def answer(request: Any) -> Any:
    from chainform.testing import tool_call

    text = json.dumps(request.json)  # any wire format: a tool result is there once the tool ran
    n = int(re.search(r"order (\d+)", text).group(1))  # type: ignore[union-attr]
    if not any(m in text for m in ('"role": "tool"', '"type": "tool_result"', '"functionResponse"')):
        return tool_call("lookup", order=n)
    if "final_result" in text:  # the tool output strategy (Gemini, Anthropic with tools)
        return tool_call("final_result", id=n, total=n / 2)
    return json.dumps({"id": n, "total": n / 2})


def run(rows: int, model_name: str, batch: bool) -> dict[str, Any]:
    from chainform import get_model
    from chainform.testing.emulator import Emulator

    with Emulator(default=answer, record=False) as emu:
        root = emu.base_url + ("/v1" if model_name.startswith("openai") else "")
        openai = {"profile": "openai"} if model_name.startswith("openai") else {}  # the emulator plays OpenAI
        model = get_model(model_name, base_url=root, key="sk-bench", max_retries=0, **openai)
        inputs = [{"text": f"order {n}"} for n in range(rows)]
        extra: dict[str, Any] = {"batch": True, "batch_poll": 0.0} if batch else {"concurrency": 32}
        started = time.perf_counter()
        results = list(
            model.map(inputs, prompt="Extract: {text}", tools=[lookup], schema="id int, total float", log=False, **extra)
        )
        seconds = time.perf_counter() - started
        batches = len(emu.batches.created)
    costs = [r.usage.cost for r in results]
    total = sum((c for c in costs if c is not None), Decimal(0))
    return {
        "rows": rows,
        "ok": sum(r.ok for r in results),
        "tokens": sum(r.usage.total_tokens or 0 for r in results),
        "cost_usd": str(total),
        "unpriced_rows": sum(c is None for c in costs),
        "batches": batches,
        "seconds": round(seconds, 2),
    }


def table(results: dict[str, Any]) -> str:
    """The markdown table bench/report.py shows: tokens, cost and time, live vs batch."""
    lines = ["| mode | rows ok | tokens | cost (USD) | batches | seconds |", "|---|---|---|---|---|---|"]
    for mode in ("live", "batch"):
        r = results[mode]
        lines.append(f"| {mode} | {r['ok']}/{r['rows']} | {r['tokens']} | {r['cost_usd']} | {r['batches']} | {r['seconds']} |")
    lines.append(f"\nbatch / live cost: {results['batch_over_live_cost']} ({results['model']})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--model", default="openai/gpt-4.1-mini")
    parser.add_argument("--out")
    args = parser.parse_args()
    live = run(args.rows, args.model, batch=False)
    batch = run(args.rows, args.model, batch=True)
    ratio = Decimal(batch["cost_usd"]) / Decimal(live["cost_usd"]) if Decimal(live["cost_usd"]) else None
    result = {
        "model": args.model,
        "live": live,
        "batch": batch,
        "batch_over_live_cost": None if ratio is None else str(round(ratio, 4)),
    }
    text = json.dumps(result, indent=2)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    print(table(result))


if __name__ == "__main__":
    main()
