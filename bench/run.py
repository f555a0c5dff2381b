"""Run every chainform benchmark in one go and write bench/results/latest.{json,md}, plots and
docs/benchmarks.md.

    python3 bench/run.py                      # everything (about 10-15 minutes on 2 cores)
    python3 bench/run.py --only chain,cli     # some sections; --quick for a smoke run

Sections: chain (overhead per chain vs the openai SDK, pydantic-ai, llm), cli (start-up), local
(embedded model, bench/bench_local.py), conformance (bench/bench_conformance.py), strategies,
sandbox (the python tool's per-call cost by isolation level, bench/bench_sandbox.py), map
(`model.amap` throughput vs an asyncio + AsyncOpenAI loop, concurrency scaling; bench/bench_map.py),
stream (a 1 MB structured answer in 8-character deltas vs the bare openai SDK, bench/bench_stream.py),
documents (OCR / PDF text + extraction seconds per page on the embedded model, bench/bench_documents.py),
attachments (peak memory sending a 40 MB PDF through each cloud adapter, bench/bench_attachments.py),
batch (the cost of one 1,000-row map job live vs through OpenAI's Batch API, bench/bench_batch.py).
The peers, matplotlib and chainform itself are installed into bench/.venv (created if missing).
The embedded-model sections need torch: they use the project's .venv when it has chainform.local
working, else chainform[local] (torch pinned to 2.13.0 by that extra) is added to bench/.venv.
Each section runs in its own process; one that fails records its error and the run goes on.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import REPO, RESULTS, machine, now

VENV = REPO / "bench" / ".venv"
VENV_PY = VENV / "bin" / "python"
PROJECT_PY = REPO / ".venv" / "bin" / "python"
SECTIONS = (
    "chain", "cli", "local", "conformance", "strategies", "sandbox", "map", "stream", "documents", "attachments",
    "otel", "batch",
)  # fmt: skip
PEERS = ["pydantic-ai-slim[openai]", "llm", "openai", "openai-agents", "matplotlib"]
PROBE = "import chainform, openai, pydantic_ai, llm, agents, matplotlib"
LOCAL_PROBE = "import torch, transformers, llguidance, onnxruntime_genai, chainform.local"


def _pip(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "-q", *args], check=True, cwd=REPO)


def ensure_venv() -> None:
    """bench/.venv with the peers, matplotlib and chainform (editable); reinstalled only when
    something is missing or pyproject.toml changed (new dependencies) since the last install."""
    if not VENV_PY.exists():
        print("creating bench/.venv", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    stamp = VENV / ".chainform-pyproject"
    wanted = hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()
    complete = subprocess.run([str(VENV_PY), "-c", PROBE], capture_output=True).returncode == 0
    if not complete or not stamp.exists() or stamp.read_text() != wanted:
        print("installing peers and chainform into bench/.venv (a few minutes the first time)", flush=True)
        _pip(VENV_PY, *PEERS, "-e", ".[openai,dev]")
        stamp.write_text(wanted)


def project_python() -> Path:
    """The project's own .venv when there is one (what its tests run on), else bench/.venv."""
    return PROJECT_PY if PROJECT_PY.exists() else VENV_PY


def local_python() -> Path:
    """An interpreter that can run the embedded model, installing it into bench/.venv if needed."""
    for python in (PROJECT_PY, VENV_PY):
        if (
            python.exists()
            and subprocess.run([str(python), "-c", LOCAL_PROBE], capture_output=True).returncode == 0
        ):
            return python
    print("installing chainform[local] into bench/.venv (torch==2.13.0)", flush=True)
    _pip(VENV_PY, "torch==2.13.0", "-e", ".[openai,dev,local]")
    return VENV_PY


def run_section(
    argv: list[str], *, timeout: float, writes: Path | None = None, out: Path | None = None
) -> dict[str, Any]:
    """Run one section's script; its JSON comes from `out` (--out), `writes` (a file it writes
    itself) or its stdout. Failures become {"error": ...} so the other sections still run."""
    started = time.time()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [*argv, "--out", str(out)] if out else argv
    try:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s: {' '.join(argv[1:])}"}
    seconds = round(time.time() - started, 1)
    for path in (out, writes):
        if path is not None and path.exists() and path.stat().st_mtime >= started - 1:
            try:
                data = json.loads(path.read_text())
            except ValueError as exc:
                return {"error": f"{path.name} is not JSON: {exc}", "seconds": seconds}
            if proc.returncode != 0:
                data["warning"] = f"exit {proc.returncode}: {proc.stderr[-800:]}"
            data["section_seconds"] = seconds
            return dict(data)
    try:
        data = json.loads(proc.stdout)
        data["section_seconds"] = seconds
        return dict(data)
    except ValueError:
        tail = (proc.stderr or proc.stdout)[-1500:]
        return {"error": f"exit {proc.returncode}, no JSON result: {tail}", "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma list of {', '.join(SECTIONS)}")
    parser.add_argument("--quick", action="store_true", help="few rounds: checks the plumbing only")
    parser.add_argument("--no-install", action="store_true", help="use bench/.venv as it is")
    parser.add_argument(
        "--sandbox-against", default="", help="sandbox: also time another source tree's src (the tree before a change)"
    )
    args = parser.parse_args()
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    report: dict[str, Any] = {"date": now(), "machine": machine(), "quick": args.quick, "sections": {}}
    try:
        if not args.no_install:
            ensure_venv()
    except subprocess.CalledProcessError as exc:
        sys.exit(f"could not prepare bench/.venv: {exc}")
    tmp = Path(tempfile.mkdtemp(prefix="chainform-bench-"))  # each section's own JSON
    bench = REPO / "bench"
    for name in only:
        print(f"[{time.time() - t0:6.0f} s] {name} ...", flush=True)
        out = tmp / f"{name}.json"
        try:
            if name == "chain":
                rounds = (
                    ["--rounds", "3", "--batch", "3"] if args.quick else ["--rounds", "30", "--batch", "10"]
                )
                result = run_section(
                    [str(VENV_PY), str(bench / "bench_chain.py"), *rounds], timeout=900, out=out
                )
            elif name == "cli":
                repeats = ["--repeats", "3" if args.quick else "15"]
                result = run_section(
                    [str(VENV_PY), str(bench / "bench_cli.py"), *repeats], timeout=600, out=out
                )
            elif name == "local":
                script = bench / "bench_local.py"
                if not script.exists():
                    result = {"error": "bench/bench_local.py is not there yet (embedded-model engineer)"}
                else:
                    result = run_section(
                        [str(local_python()), str(script), "--also", "int4"], timeout=3000, writes=RESULTS / "local.json"
                    )
            elif name == "conformance":
                result = run_section(
                    [str(project_python()), str(bench / "bench_conformance.py")],
                    timeout=1200,
                    writes=RESULTS / "conformance.json",
                )
            elif name == "sandbox":
                repeats = ["--repeats", "3" if args.quick else "30"]
                if args.sandbox_against:
                    repeats += ["--against", args.sandbox_against]
                result = run_section(
                    [str(project_python()), str(bench / "bench_sandbox.py"), *repeats], timeout=600, out=out
                )
            elif name == "map":
                sizes = ["--rounds", "2", "--rows", "40", "--per-worker", "2"] if args.quick else []
                result = run_section(
                    [str(project_python()), str(bench / "bench_map.py"), *sizes], timeout=900, out=out
                )
            elif name == "documents":
                rounds = ["--rounds", "1" if args.quick else "5"]
                result = run_section(
                    [str(local_python()), str(bench / "bench_documents.py"), *rounds], timeout=1800, out=out
                )
            elif name == "stream":
                sizes = ["--sizes", "65536", "--rounds", "1"] if args.quick else []
                result = run_section(
                    [str(VENV_PY), str(bench / "bench_stream.py"), *sizes], timeout=1800, out=out
                )
            elif name == "attachments":
                sizes = ["--mb", "8"] if args.quick else []
                result = run_section(
                    [str(project_python()), str(bench / "bench_attachments.py"), *sizes], timeout=600, out=out
                )
            elif name == "otel":
                size = ["--chains", "60", "--pairs", "2"] if args.quick else ["--chains", "300", "--pairs", "7"]
                result = run_section(
                    [str(project_python()), str(bench / "bench_otel.py"), *size], timeout=1200, out=out
                )
            elif name == "batch":
                rows = ["--rows", "100" if args.quick else "1000"]
                result = run_section(
                    [str(project_python()), str(bench / "bench_batch.py"), *rows], timeout=600, out=out
                )
            else:
                extra = ["--models", "scripted-good,scripted-sloppy"] if args.quick else []
                result = run_section(
                    [str(local_python()), str(bench / "bench_strategies.py"), *extra], timeout=900, out=out
                )
        except Exception as exc:  # an install step of a section failed: record it and go on
            result = {"error": f"{type(exc).__name__}: {exc}"}
        report["sections"][name] = result
        print(
            f"         {name}: {'ERROR ' + result['error'][:200] if 'error' in result else 'ok'}", flush=True
        )
    shutil.rmtree(tmp, ignore_errors=True)
    report["seconds"] = round(time.time() - t0, 1)
    latest = RESULTS / "latest.json"
    previous = json.loads(latest.read_text()) if latest.exists() else {}
    if set(only) != set(SECTIONS):  # a partial run keeps the other sections of the last full one
        for name, section in previous.get("sections", {}).items():
            report["sections"].setdefault(name, section)
    latest.write_text(json.dumps(report, indent=1, default=str))
    subprocess.run([str(VENV_PY), str(bench / "report.py"), str(latest)], cwd=REPO, check=False)
    print(f"done in {report['seconds']:.0f} s: bench/results/latest.md, docs/benchmarks.md", flush=True)


if __name__ == "__main__":
    main()
