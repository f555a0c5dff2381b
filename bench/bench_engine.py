"""Chain engine cost alone: CPU ms per chain on ScriptedClient (no network, no log), A/B-able.

One chain = a tool call turn + an answer turn (2 model calls), without and with a schema (native).
`--against SRC` runs the same measurement with another source tree first on PYTHONPATH (e.g. main's
`src/` before an engine change), alternating the two `--pairs` times; the minimum over runs is the
least disturbed figure on a shared machine. Run with the project's .venv:

    .venv/bin/python bench/bench_engine.py [--chains 400 --pairs 5 --against ../main/src]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any


def measure(chains: int) -> dict[str, float]:
    os.environ.setdefault("CHAINFORM_HOME", tempfile.mkdtemp(prefix="bench-engine-"))
    from pydantic import BaseModel

    import chainform as cf
    from chainform.testing import ScriptedClient, tool_call

    class Answer(BaseModel):
        city: str
        temp_c: float

    def get_weather(city: str) -> dict[str, Any]:
        """Current weather for a city."""
        return {"city": city, "temp_c": 21.5}

    profile = cf.ModelProfile(name="bench", supports_json_schema=True, supports_tools_with_schema=True)
    out: dict[str, float] = {}
    for variant, answer, kw in (
        ("tools", "Paris: 21.5", {}),
        ("tools+schema", '{"city": "Paris", "temp_c": 21.5}', {"schema": Answer}),
    ):
        model = cf.Model(
            ScriptedClient([tool_call("get_weather", city="Paris"), answer] * (chains + 5), profile)
        )
        for _ in range(5):  # warm-up: imports, caches
            model.chain("Paris?", tools=[get_weather], log=False, **kw).text()
        started = time.process_time()
        for _ in range(chains):
            model.chain("Paris?", tools=[get_weather], log=False, **kw).text()
        out[variant] = round((time.process_time() - started) / chains * 1000, 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=400)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--against", help="another source tree to compare with (put first on PYTHONPATH)")
    parser.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.once:
        print(json.dumps(measure(args.chains)))
        return
    sides = {"this tree": None, **({"against": args.against} if args.against else {})}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for _ in range(args.pairs):
        for name, src in sides.items():
            env = dict(os.environ, PYTHONPATH=src) if src else dict(os.environ)
            cmd = [sys.executable, __file__, "--once", "--chains", str(args.chains)]
            runs[name].append(
                json.loads(subprocess.run(cmd, env=env, capture_output=True, check=True).stdout)
            )
    result = {
        name: {v: {"min_cpu_ms": min(r[v] for r in rs), "runs": [r[v] for r in rs]} for v in rs[0]}
        for name, rs in runs.items()
    }
    text = json.dumps(
        {"chains": args.chains, "pairs": args.pairs, "against": args.against, **result}, indent=2
    )
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
