"""Embedded model, torch vs ONNX Runtime GenAI: load time, tokens/s free and constrained, peak memory,
and the README's first command, side by side in one run.

    python bench/bench_local.py            # writes bench/results/local.json and prints a table
    python bench/bench_local.py --also int4,fp32   # adds ONNX rows of other precisions (temporary builds)

Every backend runs in processes of its own (so peak memory and imports are its own), with the same
prompt, the same greedy loop and the same thread count (2 by default); figures are medians of
`--rounds`. Tokens/s count generated tokens over the decoding time (the prompt's prefill is timed
apart, per prompt token). Free and constrained runs decode after the same prompt (the one with the
schema's instructions); the constrained run adds the llguidance mask on every step, whose own time
is also measured, and feeds grammar-forced tokens in one pass with the token before them
(`forward_passes_per_token` < 1); `constrained_loop_overhead_pct` is what the constraint adds to
each sampling step outside the model (mask, grammar bookkeeping, forced-token search), as a share of
a free model step. llama.cpp (llama-cpp-python) runs the same GGUF, unconstrained, when it is
importable; it is not a dependency and is never built here. The machine's load average is recorded
before and after: other work on a shared machine slows every row.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import REPO, RESULTS, machine, now, versions

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
README_ARGS = ["Use python to compute 2 ** 20.", "-T", "python", "--schema", "answer int", "--td"]


def _child(args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run this script as a worker in a fresh process; its last stdout line is JSON."""
    cmd = [sys.executable, __file__, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {proc.stderr.strip()[-800:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def _peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(
    model: str, backend: str, threads: int, tokens: int, rounds: int, load_only: bool
) -> dict[str, Any]:
    """In this process: a cold load (imports included), then the timed generations."""
    started = time.perf_counter()
    from chainform.local import LocalChatClient

    client = LocalChatClient(model, backend=backend, threads=threads)
    loaded = client.load()
    load_s = time.perf_counter() - started
    if load_only:
        return {"load_s": load_s, "backend": loaded.backend, "peak_mb": _peak_mb()}
    import asyncio

    from chainform.local import _grammar
    from chainform.local.client import _chat, _prompt_ids
    from chainform.types import ChatOptions, Message, ResponseFormat

    json_options = ChatOptions(response_format=ResponseFormat.json_schema(SCHEMA))
    json_plan = _grammar.plan(json_options)
    ids = _prompt_ids(loaded.tokenizer, _chat([Message.user(PROMPT)], json_plan))
    _timed_generate(loaded, ids, None, 8)  # warm-up
    free = [_timed_generate(loaded, ids, None, tokens) for _ in range(rounds)]
    constrained = [_timed_generate(loaded, ids, json_plan.grammar, tokens) for _ in range(rounds)]
    loaded.forget()
    sample = asyncio.run(client.get_response([Message.user(PROMPT)], json_options))
    free_tps = statistics.median(r["tokens_per_s"] for r in free)
    constrained_tps = statistics.median(r["tokens_per_s"] for r in constrained)
    mask_ms = statistics.median(r["mask_ms_per_token"] for r in constrained)
    return {
        "backend": loaded.backend,
        "unconstrained_tokens_per_s": round(free_tps, 1),
        "constrained_tokens_per_s": round(constrained_tps, 1),
        "constrained_drop_pct": round(100 * (1 - constrained_tps / free_tps), 1),
        "constrained_loop_overhead_pct": round(
            100
            * (
                statistics.median(r["loop_ms_per_step"] for r in constrained)
                - statistics.median(r["loop_ms_per_step"] for r in free)
            )
            * free_tps
            / 1000,
            1,
        ),
        "forward_passes_per_token": round(statistics.median(r["passes_per_token"] for r in constrained), 2),
        "prefill_ms_per_token": round(statistics.median(r["prefill_ms_per_token"] for r in free), 2),
        "prompt_tokens": len(ids),
        "mask_ms_per_token": round(mask_ms, 3),
        "model_step_ms": round(1000 / free_tps, 2),
        "constraint_overhead_pct": round(100 * mask_ms * free_tps / 1000, 1),
        "sample_valid": _valid(sample.text),
        "sample_finish": str(sample.finish_reason),
        "peak_mb": round(_peak_mb()),
    }


def _timed_generate(loaded: Any, ids: list[int], grammar: str | None, tokens: int) -> dict[str, float]:
    """One generation from a cold context, its prefill and its mask timed apart from the decoding."""
    from chainform.local import _engine

    mask_time, prefill_time, feed_time, passes = [0.0], [0.0], [0.0], [0]
    original_mask, original_prefill = _engine._apply_mask, loaded.prefill

    def timed_mask(*args: Any) -> None:
        started = time.perf_counter()
        original_mask(*args)
        mask_time[0] += time.perf_counter() - started

    def timed_prefill(*args: Any) -> Any:
        started = time.perf_counter()
        context, logits = original_prefill(*args)
        prefill_time[0] += time.perf_counter() - started
        feed = context.feed

        def counted(new: list[int]) -> Any:
            passes[0] += 1
            started = time.perf_counter()
            logits = feed(new)
            feed_time[0] += time.perf_counter() - started
            return logits

        context.feed = counted
        return context, logits

    loaded.forget()  # no reuse of the previous round's KV cache
    _engine._apply_mask, loaded.prefill = timed_mask, timed_prefill
    try:
        started = time.perf_counter()
        result = _engine.generate(
            loaded, ids, max_new_tokens=tokens, sampling=_engine.Sampling(), grammar=grammar, landing=0
        )
        seconds = time.perf_counter() - started - prefill_time[0]
    finally:
        _engine._apply_mask = original_mask
        del loaded.prefill
        loaded.forget()
    n = max(result.output_tokens, 1)
    return {
        "tokens": result.output_tokens,
        "tokens_per_s": n / seconds,
        "mask_ms_per_token": 1000 * mask_time[0] / n,
        "prefill_ms_per_token": 1000 * prefill_time[0] / len(ids),
        "passes_per_token": (passes[0] + 1) / n,  # + the pass that produced the first token
        "loop_ms_per_step": 1000 * (seconds - feed_time[0]) / (passes[0] + 1),
    }


def _readme_command(model: str, backend: str, threads: int, rounds: int) -> dict[str, Any]:
    """The README's first command through the CLI on `model`, forced onto `backend` (medians of `rounds`)."""
    chainform = Path(sys.executable).with_name("chainform")
    times, answers = [], []
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "CHAINFORM_HOME": home, "CHAINFORM_LOCAL_THREADS": str(threads)}
        for _ in range(rounds):
            started = time.perf_counter()
            cmd = [str(chainform), "-m", model, *README_ARGS, "-o", "backend", backend]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, cwd=REPO)
            times.append(time.perf_counter() - started)
            answers.append(proc.stdout.strip()[-80:] if proc.returncode == 0 else f"exit {proc.returncode}")
    right = sum(a.replace(" ", "") == '{"answer":1048576}' for a in answers)
    return {
        "readme_command_s": round(statistics.median(times), 2),
        "readme_answers": answers,
        "readme_right": right,
    }


def _llama_cpp(tokens: int) -> dict[str, Any]:
    try:
        from llama_cpp import Llama
    except ImportError:
        return {"status": "llama-cpp-python not installed (not a dependency; not built here)"}
    from chainform.local import _weights

    with tempfile.TemporaryDirectory() as tmp:
        gguf = _weights._fetch_smollm2(Path(tmp), _weights._Steps(None, 0))
        llm = Llama(model_path=str(gguf), n_ctx=2048, n_threads=2, verbose=False)
        started = time.perf_counter()
        out = llm.create_chat_completion(
            [{"role": "user", "content": PROMPT}], max_tokens=tokens, temperature=0.0
        )
        seconds = time.perf_counter() - started
    n = out["usage"]["completion_tokens"]
    return {"status": "ok", "tokens": n, "tokens_per_s": n / seconds}


def _measure(model: str, backend: str, args: argparse.Namespace) -> dict[str, Any]:
    common = ["--threads", str(args.threads), "--tokens", str(args.tokens), "--rounds", str(args.rounds)]
    base = ["--worker", backend, "--model", model, *common]
    loads = [_child([*base, "--load-only"]) for _ in range(args.rounds)]
    row = _child(base)
    row["load_s"] = round(statistics.median(r["load_s"] for r in loads), 2)
    return row


def run(args: argparse.Namespace) -> dict[str, Any]:
    from chainform.local import _onnx, _weights, prepare

    load_before = os.getloadavg()
    torch_dir = prepare(quiet=True)
    onnx_dir = prepare(backend="onnx", quiet=True)
    rows: dict[str, dict[str, Any]] = {}
    manifest = json.loads((onnx_dir / _weights.MANIFEST).read_text())
    onnx_name = f"onnx {manifest['precision']}"
    for name, model, backend in (("torch", "smollm2", "torch"), (onnx_name, "smollm2", "onnx")):
        rows[name] = _measure(model, backend, args)
        rows[name].update(_readme_command(f"local/{model}", backend, args.threads, args.rounds))
    for precision in [p for p in args.also.split(",") if p]:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / precision
            _onnx.convert(torch_dir, folder, precision, _weights._Steps(None, 0))
            rows[f"onnx {precision}"] = _measure(str(folder), "onnx", args)
            rows[f"onnx {precision}"].update(
                _readme_command(f"onnx/{folder}", "onnx", args.threads, args.rounds)
            )
    torch_row, onnx_row = rows["torch"], rows[onnx_name]
    return {
        "model": "SmolLM2-135M-Instruct (Q4_1 GGUF dequantized to float32; ONNX: built by ORT GenAI's builder)",
        "threads": args.threads,
        "tokens_per_run": args.tokens,
        "rounds": args.rounds,
        "first_prepare_s": round(
            json.loads((torch_dir / _weights.MANIFEST).read_text()).get("seconds", 0), 1
        ),
        "onnx_prepare_s": round(manifest.get("seconds", 0), 1),
        "backends": rows,
        "onnx_backend": onnx_name,
        "ratios": {
            "constrained_tokens_per_s_onnx_over_torch": _ratio(
                onnx_row, torch_row, "constrained_tokens_per_s"
            ),
            "load_onnx_over_torch": _ratio(onnx_row, torch_row, "load_s"),
            "readme_command_onnx_over_torch": _ratio(onnx_row, torch_row, "readme_command_s"),
        },
        "load_average": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in os.getloadavg()],
        },
        "llama_cpp": _llama_cpp(args.tokens),
        "versions": versions("torch", "transformers", "onnxruntime-genai", "onnxruntime", "llguidance"),
    }


def _ratio(a: dict[str, Any], b: dict[str, Any], key: str) -> float:
    return round(a[key] / b[key], 2) if b.get(key) else float("nan")


def _valid(text: str) -> bool:
    import jsonschema

    try:
        jsonschema.validate(json.loads(text), SCHEMA)
    except (ValueError, jsonschema.ValidationError):
        return False
    return True


def table(result: dict[str, Any]) -> str:
    """The markdown tables bench/report.py puts in docs/benchmarks.md."""
    header = ["backend", "load per process", "prefill", "unconstrained", "constrained (JSON schema)",
              "mask / model step", "peak memory", "README command (right answers)", "schema-valid sample"]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, r in result["backends"].items():
        cells = [name, f"{r['load_s']} s", f"{r['prefill_ms_per_token']} ms/token",
                 f"{r['unconstrained_tokens_per_s']} tok/s",
                 f"{r['constrained_tokens_per_s']} tok/s ({r['forward_passes_per_token']} passes/token)",
                 f"{r['mask_ms_per_token']} / {r['model_step_ms']} ms ({r['constraint_overhead_pct']} %; "
                 f"all grammar work {r['constrained_loop_overhead_pct']} %)",
                 f"{r['peak_mb']} MB", f"{r['readme_command_s']} s ({r['readme_right']}/{len(r['readme_answers'])})",
                 "yes" if r["sample_valid"] else "no"]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    cpp = result.get("llama_cpp", {})
    if cpp.get("status") == "ok":
        lines.append(
            f"| llama.cpp (same GGUF) | - | - | {cpp['tokens_per_s']:.1f} tok/s | - | - | - | - | - |"
        )
    ratios = result["ratios"]
    lines += [
        "",
        f"{result['onnx_backend']} / torch: constrained tokens/s {ratios['constrained_tokens_per_s_onnx_over_torch']}×, "
        f"load {ratios['load_onnx_over_torch']}×, README command {ratios['readme_command_onnx_over_torch']}×. "
        f"Prepare: {result['first_prepare_s']} s (download + convert), then {result['onnx_prepare_s']} s "
        f"for the ONNX build. {result['threads']} threads, {result['tokens_per_run']} tokens, medians of "
        f"{result['rounds']}; load average before/after: {result['load_average']['before']} / "
        f"{result['load_average']['after']}.",
    ]
    if cpp.get("status") != "ok":
        lines.append(f"llama.cpp: {cpp.get('status', '-')}.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--also", default="", help="other ONNX precisions to measure, e.g. int4,fp32")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--model", default="smollm2", help=argparse.SUPPRESS)
    parser.add_argument("--load-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(
            json.dumps(
                worker(args.model, args.worker, args.threads, args.tokens, args.rounds, args.load_only)
            )
        )
        return
    result = run(args)
    result.update(machine=machine(), date=now())
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "local.json").write_text(json.dumps(result, indent=1))
    print(table(result))


if __name__ == "__main__":
    main()
