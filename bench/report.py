"""Turn bench/results/latest.json into latest.md, PNG plots and docs/benchmarks.md.

    bench/.venv/bin/python bench/report.py [bench/results/latest.json]

Plots need matplotlib (installed in bench/.venv); without it the tables are still written.
Every table and plot is stamped with the machine, the versions and the date of the run.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import REPO, RESULTS

DOC = REPO / "docs" / "benchmarks.md"


def stamp(report: dict[str, Any]) -> str:
    m = report.get("machine", {})
    versions: dict[str, str] = {}
    for section in report.get("sections", {}).values():
        if isinstance(section, dict):
            versions.update(
                {k: v for k, v in (section.get("versions") or {}).items() if v != "not installed"}
            )
    listed = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
    return (
        f"{m.get('cpus', '?')} × {m.get('cpu', '?')}, Python {m.get('python', '?')}; "
        f"{listed}; {report.get('date', '?')}"
    )


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def _error(section: dict[str, Any]) -> list[str]:
    return [f"Section failed: `{section['error'][:600]}`", ""] if "error" in section else []


def chain_md(section: dict[str, Any]) -> list[str]:
    lines = _error(section)
    for server, variants in (section.get("servers") or {}).items():
        for variant, data in variants.items():
            lines += [f"**{variant}**, {server} server (ms per chain of 2 HTTP calls, median of "
                      f"{data.get('rounds', section.get('rounds'))} interleaved rounds of {data.get('batch', section.get('batch'))} chains)", ""]  # fmt: skip
            rows = [
                [name, f"{r['median_ms']:.2f}", f"{r['ratio']:.3f}×",
                 f"{r['ratio_of_medians']:.2f}×" if "ratio_of_medians" in r else "", f"{r['overhead_ms']:+.2f}",
                 f"{r['min_ms']:.2f}–{r['max_ms']:.2f}"]
                for name, r in sorted(data["frameworks"].items(), key=lambda kv: kv[1]["median_ms"])
            ]  # fmt: skip
            header = ["framework", "median ms", "ratio to SDK loop", "ratio of medians", "Δ ms", "range ms"]
            lines += _table(header, rows)
            if "log_on/log_off" in data:
                log = data["log_on/log_off"]
                quartiles = f"{log['q1']:.3f}–{log['q3']:.3f}"
                lines.append(f"\nchainform log on / log off: {log['median']:.3f} (quartiles {quartiles})")
            for name, err in (data.get("errors") or {}).items():
                lines.append(f"\n- {name}: not measured: `{err[:300]}`")
            lines.append("")
    return lines


def cli_md(section: dict[str, Any]) -> list[str]:
    rows = [
        [f"`{name}`", f"{r['median_ms']:.0f}", f"{r['min_ms']:.0f}", f"{r['over_python_ms']:+.0f}"]
        for name, r in (section.get("commands") or {}).items()
    ]
    lines = _error(section)
    if rows:
        lines += [f"Median of {section.get('repeats')} runs each, interleaved, wall clock:", ""]
        lines += _table(["command", "median ms", "min ms", "over `python -c pass`"], rows)
    lines += [f"- {name}: `{err}`" for name, err in (section.get("errors") or {}).items()]
    return [*lines, ""]


def strategies_md(section: dict[str, Any]) -> list[str]:
    lines = _error(section)
    rows = []
    for model, data in (section.get("models") or {}).items():
        if "error" in data:
            lines.append(f"- {model}: not run: `{data['error'][:300]}`")
            continue
        for strategy, s in data["summary"].items():
            rows.append([model, strategy, f"{s['success']}/{s['tasks']}", f"{s['correct']}/{s['tasks']}",
                         s["model_calls"], s["tokens"], f"{s['seconds']:.1f}"])  # fmt: skip
    if rows:
        tasks = ", ".join(section.get("tasks", []))
        lines += [f"Tasks: {tasks} (the local model runs the first few).", ""]
        lines += _table(
            ["model", "strategy", "valid value", "correct value", "model calls", "tokens", "s"], rows
        )
    return [*lines, ""]


def stream_md(section: dict[str, Any]) -> list[str]:
    lines = _error(section)
    for size in section.get("sizes") or []:
        lines += [f"**{size['bytes']:,} bytes in {size['deltas']:,} deltas of {section.get('delta')} characters** "
                  f"(seconds per answer, median of {size.get('rounds', section.get('rounds'))} interleaved rounds)", ""]  # fmt: skip
        rows = [
            [name, f"{r['median_s']:.2f}", f"{r['ratio']:.2f}×"]
            + ([f"{r['cpu_s']:.2f}", f"{r['cpu_ratio']:.2f}×"] if "cpu_s" in r else ["", ""])
            for name, r in sorted(size["runners"].items(), key=lambda kv: kv[1]["median_s"])
        ]
        header = ["runner", "median s", "ratio", "client CPU s", "CPU ratio"]
        lines += [f"Ratios are to {section.get('baseline')}.", "", *_table(header, rows), ""]
    return lines


def _peer_table(name: str) -> Callable[[dict[str, Any]], str] | None:
    """The markdown `table(results)` a peer's section script defines, if it has one."""
    path = Path(__file__).parent / f"{name}.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(f"_peer_{name}", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception:
        return None
    table = getattr(module, "table", None)
    return table if callable(table) else None


def flat_md(section: dict[str, Any], prefix: str = "") -> list[str]:
    """A key/value table of the scalar results of a section whose layout this file does not know."""
    rows: list[list[Any]] = []

    def walk(value: Any, key: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{key}.{k}" if key else str(k))
        elif isinstance(value, int | float | str | bool) and key not in ("date",) and len(str(value)) < 120:
            rows.append([key, value])

    walk({k: v for k, v in section.items() if k not in ("machine", "versions")}, prefix)
    return [*_table(["measure", "value"], rows), ""] if rows else []


def peer_md(section: dict[str, Any], script: str) -> list[str]:
    if "error" in section:
        return _error(section)
    table = _peer_table(script)
    if table is not None:
        try:
            return [table(section), ""]
        except Exception:  # its layout changed under us: fall back to the generic view
            pass
    return flat_md(section)


def plots(report: dict[str, Any]) -> list[str]:
    """Write the PNGs; returns their file names (none without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    made = []
    footer = stamp(report)
    sections = report.get("sections", {})

    def save(fig: Any, name: str) -> None:
        fig.text(0.01, 0.005, footer, fontsize=6, color="gray", wrap=True)
        fig.tight_layout(rect=(0, 0.05, 1, 1))
        fig.savefig(RESULTS / name, dpi=110)
        plt.close(fig)
        made.append(name)

    chain = (sections.get("chain") or {}).get("servers", {}).get("fast")
    if chain:
        fig, ax = plt.subplots(figsize=(8, 4))
        names = list(next(iter(chain.values()))["frameworks"])
        width = 0.8 / len(chain)
        for i, (variant, data) in enumerate(chain.items()):
            values = [data["frameworks"].get(n, {}).get("median_ms", 0) for n in names]
            ax.barh([y + i * width for y in range(len(names))], values, width, label=variant)
        ax.set_yticks([y + width / 2 for y in range(len(names))], names)
        ax.set_xlabel("ms per chain (prompt → tool call → answer), median")
        ax.set_title("Overhead per chain on a loopback OpenAI-compatible server")
        ax.legend()
        save(fig, "chain_overhead.png")
    cli = (sections.get("cli") or {}).get("commands")
    if cli:
        fig, ax = plt.subplots(figsize=(7, 2.8))
        ax.barh(list(cli), [r["median_ms"] for r in cli.values()], color="tab:green")
        ax.set_xlabel("ms, median wall clock")
        ax.set_title("CLI start-up")
        save(fig, "cli_startup.png")
    models = {
        k: v for k, v in ((sections.get("strategies") or {}).get("models") or {}).items() if "summary" in v
    }
    if models:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
        strategies = ["native", "tool", "prompted", "deferred"]
        width = 0.8 / len(models)
        for i, (model, data) in enumerate(models.items()):
            s = data["summary"]
            xs = [x + i * width for x in range(len(strategies))]
            axes[0].bar(xs, [s.get(k, {}).get("model_calls", 0) for k in strategies], width, label=model)
            axes[1].bar(xs, [s.get(k, {}).get("tokens", 0) for k in strategies], width, label=model)
        for ax, title in zip(axes, ("model calls", "tokens"), strict=True):
            ax.set_xticks([x + width * (len(models) - 1) / 2 for x in range(len(strategies))], strategies)
            ax.set_title(f"Strategies: {title} (sum over tasks)")
        axes[0].legend(fontsize=7)
        save(fig, "strategies.png")
    return made


def kept_blocks(doc: str) -> dict[str, list[str]]:
    """The results page's text under each `### N. Title` heading, by title: a section this run
    left out (one run on its own, its figures written there by hand) keeps its text."""
    blocks: dict[str, list[str]] = {}
    title = None
    for line in doc.split("\n"):
        if line.startswith("### ") and line[4:5].isdigit():
            title = line[4:]
            blocks[title] = []
        elif line.startswith("## "):  # the results end where the page's next part begins
            title = None
        elif title is not None and (line or blocks[title]):  # the heading's blank line is markdown's
            blocks[title].append(line)
    return blocks


def markdown(
    report: dict[str, Any], images: list[str], image_dir: str, kept: dict[str, list[str]] | None = None
) -> str:
    s = report.get("sections", {})
    lines = [f"_Machine, versions, date: {stamp(report)}._", ""]
    if report.get("quick"):
        lines += ["**Quick run (few rounds): plumbing check, not numbers to quote.**", ""]
    blocks: list[tuple[str, str, Callable[[], list[str]], str | None]] = [
        ("chain", "1. Overhead per chain", lambda: chain_md(s["chain"]), "chain_overhead.png"),
        ("cli", "2. CLI start-up", lambda: cli_md(s["cli"]), "cli_startup.png"),
        ("local", "3. Embedded model", lambda: peer_md(s["local"], "bench_local"), None),
        ("conformance", "4. Conformance", lambda: peer_md(s["conformance"], "bench_conformance"), None),
        ("strategies", "5. Output strategies", lambda: strategies_md(s["strategies"]), "strategies.png"),
        ("sandbox", "6. Python tool sandbox", lambda: peer_md(s["sandbox"], "bench_sandbox"), None),
        ("map", "7. Many inputs (model.map)", lambda: peer_md(s["map"], "bench_map"), None),
        ("stream", "8. Streaming a large answer", lambda: stream_md(s["stream"]), None),
        ("documents", "9. Documents in (offline)", lambda: peer_md(s["documents"], "bench_documents"), None),
        ("attachments", "10. Sending a large PDF", lambda: peer_md(s["attachments"], "bench_attachments"), None),
        ("otel", "11. Tracing (OpenTelemetry)", lambda: peer_md(s["otel"], "bench_otel"), None),
        ("batch", "12. Live vs batch cost (map --batch)", lambda: peer_md(s["batch"], "bench_batch"), None),
    ]
    for key, title, render, image in blocks:
        lines += [f"### {title}", ""]
        if key not in s:
            old = (kept or {}).get(title)
            lines += old if old and not old[0].startswith("Not run") else ["Not run (`--only` left it out).", ""]
            continue
        lines += render()
        if image in images:
            lines += [f"![{title}]({image_dir}{image})", ""]
    return "\n".join(lines)


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS / "latest.json"
    report = json.loads(path.read_text())
    images = plots(report)
    (RESULTS / "latest.md").write_text(
        "# chainform benchmarks: latest run\n\n" + markdown(report, images, "")
    )
    template = (Path(__file__).parent / "benchmarks_template.md").read_text()
    kept = kept_blocks(DOC.read_text()) if DOC.exists() else {}
    DOC.write_text(template.replace("{{RESULTS}}", markdown(report, images, "../bench/results/", kept)))


if __name__ == "__main__":
    main()
