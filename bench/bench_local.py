"""Embedded model speed: load time, tokens/s free and grammar-constrained, and what the constraint costs.

    python bench/bench_local.py            # writes bench/results/local.json and prints a table

Both runs decode greedily from the same prompt with the same loop; the constrained run adds the
llguidance mask on every step. The mask's own time is also measured directly (per token), which is
the cleaner overhead figure on a busy machine. llama.cpp (llama-cpp-python) runs the same GGUF for
comparison when it is importable; it is not a dependency and is never built here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS, machine, now, versions

PROMPT = "Write a detailed story about a dragon who learns to bake bread."
SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "characters": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "age": {"type": "integer"},
                    "role": {"type": "string"},
                },
                "required": ["name", "age", "role"],
            },
            "minItems": 6,
        },
        "summary": {"type": "string"},
    },
    "required": ["title", "characters", "summary"],
}


def _load_seconds() -> float:
    """A cold load in a fresh process (imports included): what a user waits for on each run."""
    code = (
        "import time; t = time.perf_counter(); from chainform.local import LocalChatClient; "
        "LocalChatClient('smollm2').load(); print(time.perf_counter() - t)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(proc.stdout.strip().splitlines()[-1])


def _timed_generate(loaded: Any, ids: list[int], grammar: str | None, tokens: int) -> dict[str, float]:
    from chainform.local import _engine

    mask_time = [0.0]
    original = _engine._apply_mask

    def timed_mask(*args: Any) -> None:
        started = time.perf_counter()
        original(*args)
        mask_time[0] += time.perf_counter() - started

    _engine._apply_mask = timed_mask
    try:
        started = time.perf_counter()
        result = _engine.generate(
            loaded, ids, max_new_tokens=tokens, sampling=_engine.Sampling(), grammar=grammar, landing=0
        )
        seconds = time.perf_counter() - started
    finally:
        _engine._apply_mask = original
    n = max(result.output_tokens, 1)
    return {
        "tokens": result.output_tokens,
        "tokens_per_s": n / seconds,
        "mask_ms_per_token": 1000 * mask_time[0] / n,
    }


def _llama_cpp(tokens: int) -> dict[str, Any]:
    try:
        from llama_cpp import Llama
    except ImportError:
        return {"status": "llama-cpp-python not installed (not a dependency; not built here)"}
    import tempfile

    from chainform.local import _weights

    with tempfile.TemporaryDirectory() as tmp:
        gguf = _weights._fetch_smollm2(Path(tmp), _weights._Steps(None, 0))
        llm = Llama(model_path=str(gguf), n_ctx=2048, verbose=False)
        started = time.perf_counter()
        out = llm.create_chat_completion(
            [{"role": "user", "content": PROMPT}], max_tokens=tokens, temperature=0.0
        )
        seconds = time.perf_counter() - started
    n = out["usage"]["completion_tokens"]
    return {"status": "ok", "tokens": n, "tokens_per_s": n / seconds}


def run(tokens: int, rounds: int) -> dict[str, Any]:
    from chainform.local import LocalChatClient, _grammar, prepare
    from chainform.local.client import _chat, _prompt_ids
    from chainform.types import ChatOptions, Message, ResponseFormat

    folder = prepare(quiet=True)
    manifest = json.loads((folder / "chainform-model.json").read_text())
    load = [_load_seconds() for _ in range(2)]
    client = LocalChatClient("smollm2")
    loaded = client.load()
    free_plan = _grammar.plan(ChatOptions())
    json_plan = _grammar.plan(ChatOptions(response_format=ResponseFormat.json_schema(SCHEMA)))
    free_ids = _prompt_ids(loaded.tokenizer, _chat([Message.user(PROMPT)], free_plan))
    json_ids = _prompt_ids(loaded.tokenizer, _chat([Message.user(PROMPT)], json_plan))
    _timed_generate(loaded, free_ids, None, 8)  # warm-up
    free = [_timed_generate(loaded, free_ids, None, tokens) for _ in range(rounds)]
    constrained = [_timed_generate(loaded, json_ids, json_plan.grammar, tokens) for _ in range(rounds)]
    free_tps = statistics.median(r["tokens_per_s"] for r in free)
    json_tps = statistics.median(r["tokens_per_s"] for r in constrained)
    mask_ms = statistics.median(r["mask_ms_per_token"] for r in constrained)
    step_ms = 1000 / free_tps
    sample = asyncio.run(
        client.get_response(
            [Message.user(PROMPT)], ChatOptions(response_format=ResponseFormat.json_schema(SCHEMA))
        )
    )
    return {
        "model": "SmolLM2-135M-Instruct (Q4_1 GGUF dequantized to float32)",
        "first_prepare_s": round(manifest.get("seconds", float("nan")), 1),
        "load_s": round(statistics.median(load), 2),
        "tokens_per_run": tokens,
        "rounds": rounds,
        "unconstrained_tokens_per_s": round(free_tps, 1),
        "constrained_tokens_per_s": round(json_tps, 1),
        "mask_ms_per_token": round(mask_ms, 3),
        "model_step_ms": round(step_ms, 2),
        "constraint_overhead_pct": round(100 * mask_ms / step_ms, 1),
        "throughput_drop_pct": round(100 * (1 - json_tps / free_tps), 1),
        "constrained_sample": {
            "finish_reason": str(sample.finish_reason),
            "output_tokens": sample.usage_details.output_tokens if sample.usage_details else None,
            "valid": _valid(sample.text),
        },
        "llama_cpp": _llama_cpp(tokens),
        "versions": versions("torch", "transformers", "llguidance", "gguf"),
    }


def _valid(text: str) -> bool:
    import jsonschema

    try:
        jsonschema.validate(json.loads(text), SCHEMA)
    except (ValueError, jsonschema.ValidationError):
        return False
    return True


def table(result: dict[str, Any]) -> str:
    """The markdown table bench/report.py puts in docs/benchmarks.md."""
    rows = [
        ("first prepare (download + convert)", f"{result['first_prepare_s']} s"),
        ("load per process (imports included)", f"{result['load_s']} s"),
        ("unconstrained", f"{result['unconstrained_tokens_per_s']} tokens/s"),
        ("constrained (JSON schema)", f"{result['constrained_tokens_per_s']} tokens/s"),
        ("mask per token / model step", f"{result['mask_ms_per_token']} ms / {result['model_step_ms']} ms"),
        ("constraint overhead (mask time / step time)", f"{result['constraint_overhead_pct']} %"),
        ("throughput drop, constrained vs free", f"{result['throughput_drop_pct']} %"),
    ]
    cpp = result.get("llama_cpp", {})
    cpp_text = f"{cpp['tokens_per_s']:.1f} tokens/s" if cpp.get("status") == "ok" else cpp.get("status", "-")
    rows.append(("llama.cpp, same GGUF", cpp_text))
    lines = ["| measure | value |", "|---|---|", *(f"| {a} | {b} |" for a, b in rows)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    result = run(args.tokens, args.rounds)
    result.update(machine=machine(), date=now())
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "local.json").write_text(json.dumps(result, indent=1))
    print(table(result))


if __name__ == "__main__":
    main()
