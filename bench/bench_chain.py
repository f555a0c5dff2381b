"""Overhead per chain: prompt -> tool call -> answer (2 HTTP calls) on a loopback server.

Compares chainform with a hand-written loop on the official openai SDK (whole and streamed
responses), pydantic-ai and llm, all pointed at the same server through their base URL, with and
without a schema. Runs are interleaved: every round runs a batch of each framework in a shuffled
order, after a warm-up of 10 chains each; the reported time is the median over rounds of the
per-chain time, and a ratio (to the SDK loop; log on / log off) the median of the per-round ratios,
as `--ab` gives them. Run in bench/.venv:

    bench/.venv/bin/python bench/bench_chain.py [--rounds 30 --batch 10 --out FILE]

`--ab` measures what the log costs alone: chainform with the log on, with it off and the SDK loop
(the only three runners) alternate on the fast server, in a shuffled order each round, and each
round gives its own ratios (log on / log off, log on / SDK loop) from batches run seconds apart;
the medians of those per-round ratios are the figures (a shared machine's load moves all three):

    .venv/bin/python bench/bench_chain.py --ab --rounds 40 --batch 50

`--think SECONDS` makes the fast server answer each request that late (a model's think time):
`--ab --think 0.02` is what the log costs a chain at 20 ms a call (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).parent))
from _common import emit, median, start_loopback, versions

PROMPT = "What is the weather in Paris?"
MODEL = "gpt-4.1-mini"


class Answer(BaseModel):
    city: str
    temp_c: float


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return json.dumps({"city": city, "temp_c": 21.5, "sky": "sunny"})


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
RESPONSE_FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "Answer",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"}},
            "required": ["city", "temp_c"],
            "additionalProperties": False,
        },
    },
}

Runner = Callable[[], Any]


def _sdk_messages_after_call(messages: list[dict[str, Any]], calls: list[Any]) -> None:
    messages.append({"role": "assistant", "content": None, "tool_calls": calls})
    for call in calls:
        args = json.loads(call["function"]["arguments"])
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": get_weather(**args)})


def sdk_runner(base_url: str, schema: bool) -> Runner:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="bench", max_retries=0)
    extra: dict[str, Any] = {"response_format": RESPONSE_FORMAT} if schema else {}

    def run() -> Any:
        messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
        for _ in range(5):
            reply = client.chat.completions.create(
                model=MODEL, messages=messages, tools=[WEATHER_TOOL], **extra
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return Answer.model_validate_json(message.content or "") if schema else message.content
            _sdk_messages_after_call(messages, [c.model_dump() for c in message.tool_calls])
        raise RuntimeError("no answer")

    return run


def sdk_stream_runner(base_url: str, schema: bool) -> Runner:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="bench", max_retries=0)
    extra: dict[str, Any] = {"response_format": RESPONSE_FORMAT} if schema else {}

    def run() -> Any:
        messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
        for _ in range(5):
            text: list[str] = []
            calls: dict[int, dict[str, Any]] = {}
            stream = client.chat.completions.create(
                model=MODEL, messages=messages, tools=[WEATHER_TOOL], stream=True, **extra
            )
            for chunk in stream:
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                text.append(delta.content or "")
                for tc in delta.tool_calls or []:
                    slot = calls.setdefault(
                        tc.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                    )
                    slot["id"] += tc.id or ""
                    slot["function"]["name"] += (tc.function and tc.function.name) or ""
                    slot["function"]["arguments"] += (tc.function and tc.function.arguments) or ""
            if not calls:
                content = "".join(text)
                return Answer.model_validate_json(content) if schema else content
            _sdk_messages_after_call(messages, [calls[i] for i in sorted(calls)])
        raise RuntimeError("no answer")

    return run


def chainform_runner(base_url: str, schema: bool, log: bool = True) -> Runner:
    import chainform as cf

    # the loopback server plays OpenAI (at a base URL not OpenAI's, chainform would assume less)
    model = cf.get_model(f"openai/{MODEL}", base_url=base_url, key="bench", profile="openai")

    def run() -> Any:
        chain = model.chain(PROMPT, tools=[get_weather], schema=Answer if schema else None, log=log)
        return chain.value if schema else chain.text()

    return run


def pydantic_ai_runner(base_url: str, schema: bool) -> Runner:
    from pydantic_ai import Agent, NativeOutput
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=base_url, api_key="bench"))
    output: Any = NativeOutput(Answer) if schema else str
    agent = Agent(model, tools=[get_weather], output_type=output)

    def run() -> Any:
        return agent.run_sync(PROMPT).output

    return run


def llm_runner(base_url: str, schema: bool) -> Runner:
    """llm reads extra OpenAI-compatible models from extra-openai-models.yaml in its user dir."""
    home = Path(tempfile.mkdtemp(prefix="bench-llm-"))
    (home / "extra-openai-models.yaml").write_text(
        f"- model_id: bench-loopback\n  model_name: {MODEL}\n  api_base: {base_url}\n"
        "  supports_tools: true\n  supports_schema: true\n"
    )
    os.environ["LLM_USER_PATH"] = str(home)
    import llm

    model = llm.get_model("bench-loopback")

    def run() -> Any:
        chain = model.chain(PROMPT, tools=[get_weather], schema=Answer if schema else None, key="bench")
        text = chain.text()
        return Answer.model_validate_json(text) if schema else text

    return run


FRAMEWORKS: dict[str, Callable[[str, bool], Runner]] = {
    "openai SDK loop": sdk_runner,
    "openai SDK loop (stream)": sdk_stream_runner,
    "chainform": chainform_runner,
    "chainform (log=False)": lambda url, schema: chainform_runner(url, schema, log=False),
    "pydantic-ai": pydantic_ai_runner,
    "llm": llm_runner,
}
BASELINE = "openai SDK loop"


def start_server(kind: str, *args: str) -> tuple[subprocess.Popen[str], str]:
    return start_loopback(kind, *args)


def check(result: Any, schema: bool) -> None:
    if schema:
        value = result if isinstance(result, Answer) else Answer.model_validate(result)
        if value != Answer(city="Paris", temp_c=21.5):
            raise AssertionError(f"wrong answer {result!r}")
    elif "21.5" not in str(result):
        raise AssertionError(f"wrong answer {result!r}")


def interleaved(
    runners: dict[str, Runner], rounds: int, batch: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Per round, a batch of each runner in a shuffled order: ms per chain, wall clock and CPU."""
    wall: dict[str, list[float]] = {name: [] for name in runners}
    cpu: dict[str, list[float]] = {name: [] for name in runners}
    order = list(runners)
    rng = random.Random(8)
    for _ in range(rounds):
        rng.shuffle(order)
        for name in order:
            run = runners[name]
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(batch):
                run()
            wall[name].append((time.perf_counter() - t0) / batch * 1000)
            cpu[name].append((time.process_time() - c0) / batch * 1000)
    return wall, cpu


def paired(samples: dict[str, list[float]], a: str, b: str) -> dict[str, float]:
    """The median (and quartiles) of a/b per round: batches run seconds apart in the same round, so
    a load that moves both cancels out, which a ratio of two medians does not do."""
    per_round = sorted(x / y for x, y in zip(samples[a], samples[b], strict=True))
    n = len(per_round)
    return {
        "median": round(median(per_round), 4),
        "q1": round(per_round[n // 4], 4),
        "q3": round(per_round[(3 * n) // 4], 4),
    }


def measure(base_url: str, schema: bool, rounds: int, batch: int, warm: int = 10) -> dict[str, Any]:
    runners: dict[str, Runner] = {}
    errors: dict[str, str] = {}
    for name, factory in FRAMEWORKS.items():
        try:
            run = factory(base_url, schema)
            for _ in range(warm):  # imports, caches, connections, the log's first open
                check(run(), schema)
            runners[name] = run
        except Exception as exc:  # a peer that cannot do this variant is reported, not fatal
            errors[name] = f"{type(exc).__name__}: {str(exc)[:300]}"
    samples, _ = interleaved(runners, rounds, batch)
    base = median(samples[BASELINE]) if BASELINE in samples else float("nan")
    rows = {
        name: {
            "median_ms": round(median(s), 3),
            "min_ms": round(min(s), 3),
            "max_ms": round(max(s), 3),
            "ratio": paired(samples, name, BASELINE)["median"] if BASELINE in samples else float("nan"),
            "ratio_of_medians": round(median(s) / base, 3),
            "overhead_ms": round(median(s) - base, 3),
        }
        for name, s in samples.items()
    }
    result = {"frameworks": rows, "errors": errors, "rounds": rounds, "batch": batch, "samples_ms": samples}
    on, off = AB_RUNNERS[0], AB_RUNNERS[1]
    if on in samples and off in samples:
        result["log_on/log_off"] = paired(samples, on, off)
    return result


AB_RUNNERS = ("chainform", "chainform (log=False)", BASELINE)


def measure_ab(base_url: str, schema: bool, rounds: int, batch: int) -> dict[str, Any]:
    """Log on vs log off vs the SDK loop, interleaved: the median of the per-round ratios, wall
    clock and CPU (process time, steadier on a busy machine)."""
    runners = {name: FRAMEWORKS[name](base_url, schema) for name in AB_RUNNERS}
    for run in runners.values():
        for _ in range(20):  # warm-up: imports, caches, the log's first open
            check(run(), schema)
    wall, cpu = interleaved(runners, rounds, batch)

    on, off = AB_RUNNERS[0], AB_RUNNERS[1]
    return {
        "median_ms": {name: round(median(s), 3) for name, s in wall.items()},
        "median_cpu_ms": {name: round(median(s), 3) for name, s in cpu.items()},
        "log_on/log_off": paired(wall, on, off),
        "log_on/log_off cpu": paired(cpu, on, off),
        "log_on/sdk": paired(wall, on, BASELINE),
        "log_off/sdk": paired(wall, off, BASELINE),
        "rounds": rounds,
        "batch": batch,
    }


def main_ab(rounds: int, batch: int, variants: list[str], out: str | None, think: float = 0.0) -> None:
    proc, url = start_server("fast", *([str(think)] if think else []))
    try:
        result: dict[str, Any] = {
            "mode": "ab",
            "think_s": think,
            "load_before": os.getloadavg()[0],
            "versions": versions("chainform", "openai", "httpx"),
        }
        for variant in variants:
            result[variant] = measure_ab(url, variant == "tools+schema", rounds, batch)
        result["load_after"] = os.getloadavg()[0]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    emit(result, out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--servers", default="fast,emulator")
    parser.add_argument("--out")
    parser.add_argument("--ab", action="store_true", help="log on vs log off vs the SDK loop only")
    parser.add_argument("--think", type=float, default=0.0, help="--ab: the server's delay per reply, seconds")
    parser.add_argument("--variants", default="tools,tools+schema")
    args = parser.parse_args()
    os.environ.setdefault("CHAINFORM_HOME", tempfile.mkdtemp(prefix="bench-cf-"))
    if args.ab:
        main_ab(args.rounds, args.batch, args.variants.split(","), args.out, args.think)
        return
    result: dict[str, Any] = {
        "rounds": args.rounds,
        "batch": args.batch,
        "baseline": BASELINE,
        "versions": versions("chainform", "openai", "pydantic-ai-slim", "llm", "httpx"),
        "servers": {},
    }
    for kind in args.servers.split(","):
        proc, url = start_server(kind)
        try:
            # the emulator is only there to show how much a test server's own speed weighs
            rounds, batch = (
                (args.rounds, args.batch)
                if kind == "fast"
                else (max(3, args.rounds // 3), max(2, args.batch // 2))
            )
            result["servers"][kind] = {
                variant: measure(url, variant == "tools+schema", rounds, batch)
                for variant in ("tools", "tools+schema")
            }
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    emit(result, args.out)


if __name__ == "__main__":
    main()
