"""Per-call cost of the python tool's sandbox: isolation "process" vs "auto"/"strict", side by side.

Every row runs the same cell (``2 ** 20``) as a fresh process, interleaved round by round after
one untimed warm-up, wall clock (and the CPU time of the child processes, steadier on a busy
machine), median. Peers for scale: the bare interpreter (``python -I -S -c``,
the floor any fresh-interpreter tool pays) and util-linux ``unshare`` wrapping it (namespaces by
shelling out, without Landlock), where that binary exists.

    .venv/bin/python bench/bench_sandbox.py [--repeats 30 --readme --against SRC --out FILE]

``--against SRC`` adds rows for isolation auto and strict from another source tree (e.g. a
``git worktree`` of the commit before a change to the guards): each tree runs in its own worker
process, which times its calls itself, interleaved with the rest, so the table gives the per-call
cost of a change as a ratio. ``--readme`` also times the README's first command (embedded model, one python call) once with
``--python-isolation process`` and once with ``auto`` (model time dominates; informational).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import emit, median, versions

CELL = "2 ** 20"


def _children_cpu() -> float:
    """CPU seconds of every finished child process (all stages of the sandbox are waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tool(level: str) -> Callable[[], None]:
    from chainform.tools import python

    def run() -> None:
        out = python(CELL, isolation=level)
        assert out == "1048576\n", out

    return run


_WORKER = """
import resource, sys, time, warnings
from chainform.tools import python
warnings.simplefilter("ignore")
def cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
for line in sys.stdin:
    c0, t0 = cpu(), time.perf_counter()
    out = python(sys.argv[1], isolation=line.strip())
    wall = time.perf_counter() - t0
    assert out == "1048576\\n", out
    print(wall * 1000, (cpu() - c0) * 1000, flush=True)
"""


def _worker(src: str, level: str, workers: dict[str, subprocess.Popen[str]]) -> Callable[[], tuple[float, float]]:
    """A call in a long-lived process that imports chainform from ``src``; it reports (wall ms, CPU ms)."""
    if src not in workers:
        workers[src] = subprocess.Popen(
            [sys.executable, "-c", _WORKER, CELL],
            env={**os.environ, "PYTHONPATH": src},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
    proc = workers[src]

    def run() -> tuple[float, float]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(level + "\n")
        proc.stdin.flush()
        wall, cpu = proc.stdout.readline().split()
        return float(wall), float(cpu)

    return run


def _process(argv: list[str]) -> Callable[[], None]:
    def run() -> None:
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

    return run


def rows(against: str = "") -> dict[str, Callable[[], object]]:
    bare = [sys.executable, "-I", "-S", "-c", f"print({CELL})"]
    out: dict[str, Callable[[], object]] = {"python -I -S (floor)": _process(bare)}
    unshare = shutil.which("unshare")
    if unshare and sys.platform == "linux":
        out["unshare -Urnpf + python (peer)"] = _process([unshare, "-Urnpf", "--mount-proc", *bare])
    for level in ("process", "auto", "strict"):
        out[f"chainform python, isolation={level}"] = _tool(level)
    if against:
        here, workers = str(Path(__file__).resolve().parents[1] / "src"), _WORKERS
        for level in ("auto", "strict"):
            out[f"isolation={level}, this tree (worker)"] = _worker(here, level, workers)
            out[f"isolation={level}, --against tree (worker)"] = _worker(against, level, workers)
    return out


_WORKERS: dict[str, subprocess.Popen[str]] = {}


def _readme(level: str) -> float:
    argv = [
        str(Path(sys.executable).parent / "chainform"),
        "-m",
        "local",
        "Use python to compute 2 ** 20.",
        "-T",
        "python",
        "--schema",
        "answer int",
        "--python-isolation",
        level,
        "-n",
    ]
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ}, timeout=600)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-500:])
    return round(seconds, 2)


def table(result: dict[str, Any]) -> str:
    """The markdown docs/benchmarks.md shows (bench/report.py calls this)."""
    lines = [
        f"Cell `{result['cell']}`, median of {result['repeats']} fresh runs each, interleaved, wall clock; "
        f"level in force for auto: **{result['guards']['isolation']}**.",
        "",
        "| how the cell runs | median ms | min ms | ratio to isolation=process | added ms | child CPU ms |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in result["calls"].items():
        lines.append(
            f"| {name} | {r['median_ms']:.0f} | {r['min_ms']:.0f} | {r['vs_process']:.2f} | {r['added_ms']:+.0f} "
            f"| {r['child_cpu_ms']:.0f} |"
        )
    for level, ratio in (result.get("against") or {}).items():
        lines.append(
            f"\nisolation={level}, this tree vs the --against tree, per call (medians): "
            f"{ratio['wall']:.2f}x wall clock, {ratio['cpu']:.2f}x child CPU"
        )
    for level, seconds in (result.get("readme_seconds") or {}).items():
        lines.append(f"\nREADME command (embedded model, one python call), isolation={level}: {seconds} s")
    lines += [f"\n- {name}: not measured: `{err[:300]}`" for name, err in result.get("errors", {}).items()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--readme", action="store_true")
    parser.add_argument("--against", default="", help="another source tree's src folder")
    parser.add_argument("--out")
    args = parser.parse_args()
    runs = rows(args.against)
    samples: dict[str, list[float]] = {}
    errors: dict[str, str] = {}
    for name, run in runs.items():
        try:
            run()
            samples[name] = []
        except Exception as exc:
            errors[name] = f"{type(exc).__name__}: {exc}"
    cpu: dict[str, list[float]] = {name: [] for name in samples}
    for _ in range(args.repeats):
        for name in samples:
            c0, t0 = _children_cpu(), time.perf_counter()
            timed = runs[name]()
            wall, used = (time.perf_counter() - t0) * 1000, (_children_cpu() - c0) * 1000
            if isinstance(timed, tuple):  # a worker timed the call itself
                wall, used = timed
            samples[name].append(wall)
            cpu[name].append(used)
    base = median(samples.get("chainform python, isolation=process", []))
    table: dict[str, Any] = {
        name: {
            "median_ms": round(median(s), 1),
            "min_ms": round(min(s), 1),
            "vs_process": round(median(s) / base, 2),
            "added_ms": round(median(s) - base, 1),
            "child_cpu_ms": round(median(cpu[name]), 1),
        }
        for name, s in samples.items()
    }
    from chainform.tools import python

    result: dict[str, Any] = {
        "repeats": args.repeats,
        "cell": CELL,
        "calls": table,
        "guards": python(CELL).metadata,
        "errors": errors,
        "versions": versions("chainform"),
    }
    for proc in _WORKERS.values():
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=30)
    if args.against:
        pairs = [(level, f"isolation={level}, this tree (worker)", f"isolation={level}, --against tree (worker)")
                 for level in ("auto", "strict")]  # fmt: skip
        result["against"] = {
            level: {
                "wall": round(median(samples[new]) / median(samples[old]), 2),
                "cpu": round(median(cpu[new]) / median(cpu[old]), 2),
            }
            for level, new, old in pairs
            if new in samples and old in samples
        }
    if args.readme:
        result["readme_seconds"] = {level: _readme(level) for level in ("process", "auto")}
    emit(result, args.out)


if __name__ == "__main__":
    main()
