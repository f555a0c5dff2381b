"""The embedded model at dataset scale: a folder of long invoices, chainform's `map -m local` beside llama.cpp's
`llama-server` (when one is given) on the same GGUF and threads.

    python bench/bench_local_scale.py [--rows 8] [--lines 80] [--threads 2]
        [--llama-server PATH] [--gguf FILE] [--out bench/results/local_scale.json]

Documents come from `scripts/make_long_docs.py` (invoices of `--lines` items, about 2,600 SmolLM2
tokens at 80, with their answers). Measured, each engine in processes of its own:

- warm load: `LocalChatClient.load()` plus the first forward pass, the model already prepared;
- single long document: one row, alone, after the load (seconds to the whole answer);
- rows/min: `chainform map rows.jsonl -m local --concurrency 4 --schema schema.json` over `--rows` rows
  (llama-server: the same prompts and schema, four requests at a time, `--parallel 4 --cont-batching`);
- peak memory of that process (ru_maxrss of the map process; llama-server's VmHWM);
- fields right: the share of the five fields equal to the answer (a total within 0.005), and of rows
  with all five right.

The load average before and after is recorded: on a shared machine other work slows every row.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import REPO, RESULTS, emit, versions

sys.path.insert(0, str(REPO / "scripts"))
from make_long_docs import SCHEMA, TEMPLATE
from make_long_docs import main as make_docs

FIELDS = tuple(SCHEMA["required"])  # type: ignore[arg-type]
SERVER_WAIT_S = 120
"""How long llama-server may take to answer /health before the run gives up on it."""
REQUEST_TIMEOUT_S = 900


def score(values: dict[str, Any], answers: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Share of fields right and of rows with every field right, over the rows in `answers`."""
    fields = rows = 0
    for key, answer in answers.items():
        value = values.get(key)
        right = [
            _same(field, value.get(field) if isinstance(value, dict) else None, answer[field])
            for field in FIELDS
        ]
        fields += sum(right)
        rows += all(right)
    total = max(1, len(answers))
    return {"fields_right": fields / (total * len(FIELDS)), "rows_all_right": rows / total}


def _same(field: str, got: Any, want: Any) -> bool:
    if field == "total":
        try:
            return abs(float(got) - float(want)) < 0.005
        except (TypeError, ValueError):
            return False
    return isinstance(got, str) and got.strip().lower() == str(want).lower()


def _run_measured(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """Run `cmd`; (wall seconds, peak RSS of that process in MB, exit status, its stderr's tail)."""
    with tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)  # its own rusage: ru_maxrss in KiB on Linux
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return wall, usage.ru_maxrss / 1024, proc.returncode, err.read()[-400:]


def chainform_single(folder: Path, threads: int) -> dict[str, Any]:
    """Warm load to the first forward, then one long document alone (a child process)."""
    code = f"""
import asyncio, json, time
t0 = time.perf_counter()
from chainform.local import LocalChatClient
from chainform.types import ChatOptions, Message, ResponseFormat
client = LocalChatClient("smollm2", threads={threads})
loaded = client.load()
ids = loaded.tokenizer.encode("<|im_start|>user\\nhi<|im_end|>\\n")
loaded.open_session(len(ids) + 1).feed(ids)
load_s = time.perf_counter() - t0
row = json.loads(open({str(folder / "rows.jsonl")!r}).readline())
schema = json.loads(open({str(folder / "schema.json")!r}).read())
options = ChatOptions(response_format=ResponseFormat.json_schema(schema), max_output_tokens=128)
t1 = time.perf_counter()
r = asyncio.run(client.get_response([Message.user({TEMPLATE!r}.format(text=row["text"]))], options))
print(json.dumps({{"warm_load_s": load_s, "single_s": time.perf_counter() - t1,
                  "prompt_tokens": r.usage_details.input_tokens, "backend": loaded.backend}}))
"""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[-400:]}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def chainform_map(folder: Path, threads: int, concurrency: int) -> dict[str, Any]:
    out = folder / "chainform-out.jsonl"
    out.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "chainform.cli", "map", str(folder / "rows.jsonl"), "-o", str(out), "-m", "local",
           "--concurrency", str(concurrency), "--schema", str(folder / "schema.json"), "-p", TEMPLATE,
           "--id-field", "id", "-n"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "CHAINFORM_LOCAL_THREADS": str(threads)}
    wall, peak, status, err = _run_measured(cmd, env)
    if status not in (0, 1) or not out.is_file():
        return {"error": err.strip()}
    values = {}
    for line in out.read_text().splitlines():
        row = json.loads(line)
        values[str(row["id"])] = row.get("value")
    return {"wall_s": wall, "rows": len(values), "peak_mb": peak, "values": values}


def _fetch_gguf(work: Path) -> Path:
    from chainform.local import _weights

    class Quiet:
        def step(self, _: str) -> None:
            pass

    return _weights._fetch_smollm2(work, Quiet())  # type: ignore[arg-type]  # the same checked GGUF


def llama_server(binary: Path, gguf: Path, folder: Path, threads: int, parallel: int) -> dict[str, Any]:
    port = 18080 + os.getpid() % 1000
    cmd = [str(binary), "-m", str(gguf), "-t", str(threads), "--parallel", str(parallel), "--cont-batching",
           "-c", str(4096 * parallel), "--host", "127.0.0.1", "--port", str(port), "--no-webui"]  # fmt: skip
    started = time.perf_counter()
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.perf_counter() - started > SERVER_WAIT_S:
                err = server.stderr.read() if server.stderr else ""
                return {"error": f"llama-server did not start: {err.strip()[-400:]}"}
            time.sleep(0.2)
        load_s = time.perf_counter() - started
        rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines()]

        def ask(row: dict[str, Any]) -> tuple[str, Any]:
            body = {
                "messages": [{"role": "user", "content": TEMPLATE.format(text=row["text"])}],
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "invoice", "schema": SCHEMA},
                },
                "temperature": 0,
                "max_tokens": 128,
            }
            request = urllib.request.Request(f"{base}/v1/chat/completions", json.dumps(body).encode(),
                                             {"Content-Type": "application/json"})  # fmt: skip
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                text = json.loads(response.read())["choices"][0]["message"]["content"]
            try:
                return str(row["id"]), json.loads(text)
            except ValueError:
                return str(row["id"]), text

        t0 = time.perf_counter()
        ask(rows[0])
        single = time.perf_counter() - t0
        t1 = time.perf_counter()
        with ThreadPoolExecutor(parallel) as pool:
            values = dict(pool.map(ask, rows))
        wall = time.perf_counter() - t1
        peak = _vm_hwm_mb(server.pid)
        return {"load_s": load_s, "single_s": single, "wall_s": wall, "rows": len(values), "peak_mb": peak,
                "values": values}  # fmt: skip
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _vm_hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--lines", type=int, default=80)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--llama-server", type=Path, help="a llama-server binary (built from llama.cpp)")
    parser.add_argument(
        "--gguf", type=Path, help="the GGUF llama-server runs (default: fetched as prepare does)"
    )
    parser.add_argument("--out", default=str(RESULTS / "local_scale.json"))
    args = parser.parse_args()
    result: dict[str, Any] = {"load_before": os.getloadavg(), "rows": args.rows, "lines": args.lines,
                              "threads": args.threads, "concurrency": args.concurrency,
                              "versions": versions("onnxruntime-genai", "llguidance")}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make_docs([str(folder), "--count", str(args.rows), "--lines", str(args.lines)])
        answers = {a["id"]: a for a in map(json.loads, (folder / "answers.jsonl").read_text().splitlines())}
        engines: dict[str, dict[str, Any]] = {"chainform": chainform_single(folder, args.threads)}
        engines["chainform"] |= chainform_map(folder, args.threads, args.concurrency)
        if args.llama_server is not None:
            gguf = args.gguf or _fetch_gguf(folder)
            engines["llama-server"] = llama_server(
                args.llama_server, gguf, folder, args.threads, args.concurrency
            )
        for run in engines.values():
            values = run.pop("values", None)
            if values is not None:
                run |= score(values, answers)
                run["rows_per_min"] = 60 * run["rows"] / run["wall_s"]
        result["engines"] = engines
    result["load_after"] = os.getloadavg()
    emit(result, args.out)
    print(table(result))


def table(result: dict[str, Any]) -> str:
    """The markdown table docs/benchmarks.md shows."""
    rows = ["| engine | warm load s | single document s | rows/min (concurrency "
            f"{result['concurrency']}) | peak MB | fields right | rows all right |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, run in result["engines"].items():
        if "error" in run:
            rows.append(f"| {name} | error: {run['error'][:80]} | | | | | |")
            continue
        load = run.get("warm_load_s", run.get("load_s", float("nan")))
        rows.append(f"| {name} | {load:.2f} | {run.get('single_s', float('nan')):.1f} | "
                    f"{run['rows_per_min']:.2f} | {run['peak_mb']:.0f} | {run['fields_right']:.0%} | "
                    f"{run['rows_all_right']:.0%} |")  # fmt: skip
    return "\n".join(rows)


if __name__ == "__main__":
    main()
