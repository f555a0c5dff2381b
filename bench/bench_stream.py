"""Streaming a large structured answer: chainform against the bare openai SDK on the same stream.

A loopback server answers every request with one pre-rendered SSE body: a JSON answer of SIZE
bytes cut into DELTA-character content deltas (the red-team case: 1 MB in 8-character deltas,
about 130,000 events). The baseline is the openai SDK consuming that stream and parsing the joined
text with pydantic; chainform runs `model.prompt(..., schema=Items).value` (the answer validated),
with and without the log, and `partial()` (every partial object a UI would draw). Reported as the
median over rounds and the ratio to the baseline. Run in bench/.venv or the project's .venv:

    python bench/bench_stream.py [--sizes 131072,1048576 --delta 8 --rounds 3 --out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).parent))
from _common import emit, median, start_loopback, versions

MODEL = "gpt-4.1-mini"
BASELINE = "openai SDK (stream)"


class Item(BaseModel):
    id: int
    name: str
    tags: list[str]
    score: float


class Items(BaseModel):
    items: list[Item]


def answer_of(size: int) -> str:
    """A JSON answer of about `size` bytes."""
    items: list[dict[str, Any]] = []
    length = 12
    while length < size:
        item = {"id": len(items), "name": f"item number {len(items)}", "tags": ["red", "blue"], "score": 0.5}
        items.append(item)
        length += len(json.dumps(item)) + 2
    return json.dumps({"items": items})


def sse_body(text: str, delta: int) -> bytes:
    base = {"id": "chatcmpl-big", "object": "chat.completion.chunk", "created": 0, "model": MODEL}

    def event(delta_obj: dict[str, Any], finish: str | None = None) -> str:
        chunk = {**base, "choices": [{"index": 0, "delta": delta_obj, "finish_reason": finish}]}
        return f"data: {json.dumps(chunk)}\n\n"

    events = [event({"role": "assistant", "content": ""})]
    events += [event({"content": text[i : i + delta]}) for i in range(0, len(text), delta)]
    events.append(event({}, "stop"))
    usage = {"prompt_tokens": 10, "completion_tokens": len(text) // 4, "total_tokens": 10 + len(text) // 4}
    events.append(f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n")
    return ("".join(events) + "data: [DONE]\n\n").encode()


Runner = Callable[[], Any]


def sdk_runner(base_url: str) -> Runner:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="bench", max_retries=0)

    def run() -> Any:
        stream = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Items?"}], stream=True
        )
        text = [chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices]
        return Items.model_validate_json("".join(text))

    return run


def chainform_runner(base_url: str, *, log: bool, partial: bool = False) -> Runner:
    import chainform as cf

    model = cf.get_model(f"openai/{MODEL}", base_url=base_url, key="bench", profile="openai")  # plays OpenAI

    def run() -> Any:
        chain = model.prompt("Items?", schema=Items, log=log)
        if partial:
            return Items.model_validate(list(chain.partial())[-1])
        return chain.value

    return run


RUNNERS: dict[str, Callable[[str], Runner]] = {
    BASELINE: sdk_runner,
    "chainform .value": lambda url: chainform_runner(url, log=True),
    "chainform .value (log=False)": lambda url: chainform_runner(url, log=False),
    "chainform .partial()": lambda url: chainform_runner(url, log=False, partial=True),
}


def measure(size: int, delta: int, rounds: int, *, warm_up: bool) -> dict[str, Any]:
    """Median seconds per answer of each runner; `warm_up` first runs each once untimed (imports,
    first connection, the log's creation), which matters only for the first, smallest size."""
    text = answer_of(size)
    expected = Items.model_validate_json(text)
    with tempfile.NamedTemporaryFile(suffix=".sse", delete=False) as handle:
        handle.write(sse_body(text, delta))
    proc, url = start_loopback("big", handle.name)
    samples: dict[str, list[float]] = {name: [] for name in RUNNERS}
    cpu: dict[str, list[float]] = {name: [] for name in RUNNERS}
    try:
        runners = {name: factory(url) for name, factory in RUNNERS.items()}
        for run in runners.values() if warm_up else ():
            run()
        for _ in range(rounds):  # interleaved, so drift in machine load hits every runner alike
            for name, run in runners.items():
                t0, c0 = time.perf_counter(), time.process_time()
                result = run()
                samples[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)  # the client's CPU (the server is apart)
                if result != expected:
                    raise AssertionError(f"{name} returned a different answer")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        os.unlink(handle.name)
    base, base_cpu = median(samples[BASELINE]), median(cpu[BASELINE])
    rows = {
        name: {
            "median_s": round(median(s), 3),
            "ratio": round(median(s) / base, 2),
            "cpu_s": round(median(cpu[name]), 3),
            "cpu_ratio": round(median(cpu[name]) / base_cpu, 2),
        }
        for name, s in samples.items()
    }
    return {
        "bytes": len(text),
        "deltas": -(-len(text) // delta),
        "rounds": rounds,
        "runners": rows,
        "samples_s": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="131072,1048576")
    parser.add_argument("--delta", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runners", default=",".join(RUNNERS), help="comma list (the baseline always runs)")
    parser.add_argument("--out")
    args = parser.parse_args()
    wanted = {BASELINE, *args.runners.split(",")}
    for name in set(RUNNERS) - wanted:
        del RUNNERS[name]
    os.environ.setdefault("CHAINFORM_HOME", tempfile.mkdtemp(prefix="bench-cf-"))
    result: dict[str, Any] = {
        "delta": args.delta,
        "rounds": args.rounds,
        "baseline": BASELINE,
        "versions": versions("chainform", "openai", "httpx", "pydantic-core"),
        "sizes": [
            measure(int(s), args.delta, args.rounds, warm_up=i == 0)
            for i, s in enumerate(args.sizes.split(","))
        ],
    }
    emit(result, args.out)


if __name__ == "__main__":
    main()
