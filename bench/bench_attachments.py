"""Peak memory sending one large PDF through each cloud adapter (issue 25: at most 3x the file).

    python3 bench/bench_attachments.py [--mb 40] [--adapters openai-chat,anthropic,...] [--out FILE]

The emulator runs in this process; each adapter sends in a child process of its own, which
measures the peak of Python's traced memory (tracemalloc, started before the file's bytes are
made, so the file itself counts once) and the growth of its peak resident set over one call
(VmHWM, reset through /proc/self/clear_refs before it; the allocator's tracing slows nothing here). The profile's size limit is lifted for the measurement (Anthropic and Bedrock refuse a 40 MB
PDF before sending it); what is measured is what the adapter and its SDK copy. Each adapter runs
twice: "eager" puts the base64 itself in the request (as before clients/_splice.py), "spliced" is
what chainform does. Results go to bench/results/attachments.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import REPO, RESULTS, machine, now, versions

ADAPTERS = ("openai-chat", "openai-responses", "anthropic", "gemini", "bedrock")

_CHILD = r"""
import asyncio, gc, json, os, sys, tracemalloc
from chainform.types import DataContent, Message, MediaSupport, TextContent

name, base_url, size, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
PDF = "application/pdf"
media = MediaSupport(types=frozenset({PDF}))

def make():
    if name == "openai-chat":
        from chainform.clients.openai_chat import create_client
        return create_client("gpt-4.1", key="sk-test", base_url=base_url + "/v1", max_retries=0, profile="openai")
    if name == "openai-responses":
        from chainform.clients.openai_responses import create_client
        return create_client("gpt-4.1", key="sk-test", base_url=base_url + "/v1", max_retries=0, profile="openai")
    if name == "anthropic":
        from chainform.clients.anthropic import create_client
        return create_client("claude-sonnet-4-5", key="sk-ant-test", base_url=base_url, max_retries=0)
    if name == "gemini":
        from chainform.clients.gemini import create_client
        return create_client("gemini-2.5-flash", key="g-test", base_url=base_url, max_retries=0)
    from chainform.clients.bedrock import create_client
    return create_client("anthropic.claude-sonnet-4-5-20250929-v1:0", base_url=base_url, region="us-east-1",
                         max_retries=0, aws_access_key_id="AKIDTEST", aws_secret_access_key="secret")

def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0

def reset_peak():
    with open("/proc/self/clear_refs", "w") as handle:  # Linux: VmHWM starts again from VmRSS
        handle.write("5")

async def send(client, data):
    message = Message.user([TextContent("Summarise it."), DataContent(data, PDF, name="big.pdf")])
    await client.get_response([message])

async def main():
    client = make()
    if mode == "eager":  # the base64 itself in the request, as before splicing (clients/_splice.py)
        client.endpoint.splices = False
    client.endpoint.profile = client.profile.replace(media=media)
    await send(client, b"%PDF-1.7\n" + b"x" * 1000)  # warm: imports, connections, caches
    gc.collect()
    rss0 = rss("VmRSS")
    reset_peak()
    tracemalloc.start()
    data = os.urandom(size)  # the file as an Attachment holds it (its type given, not sniffed)
    await send(client, data)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss1 = rss("VmHWM")
    await client.aclose()
    print(json.dumps({"traced_peak": peak, "rss_growth": max(0, rss1 - rss0)}))

asyncio.run(main())
"""


def measure(name: str, base_url: str, size: int, mode: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, name, base_url, str(size), mode],
        capture_output=True,
        text=True,
        env=env,
    )
    if done.returncode != 0:
        return {"adapter": name, "mode": mode, "error": done.stderr.strip().splitlines()[-1:]}
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "adapter": name,
        "mode": mode,
        "traced_peak_mb": round(found["traced_peak"] / 1e6, 1),
        "traced_ratio": round(found["traced_peak"] / size, 2),
        "rss_growth_mb": round(found["rss_growth"] / 1e6, 1),
        "rss_ratio": round(found["rss_growth"] / size, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=40.0)
    parser.add_argument("--adapters", default=",".join(ADAPTERS))
    parser.add_argument("--out", type=Path, default=RESULTS / "attachments.json")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "src"))
    from chainform.testing.emulator import Emulator

    size = int(args.mb * 1_000_000)
    rows = []
    with Emulator(default="ok", record=False) as emu:
        for name in args.adapters.split(","):
            for mode in ("eager", "spliced"):
                rows.append(measure(name, emu.base_url, size, mode))
                print(json.dumps(rows[-1]), flush=True)
    result = {
        "when": now(),
        "machine": machine(),
        "versions": versions("openai", "anthropic", "google-genai", "boto3"),
        "file_mb": args.mb,
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))


def table(result: dict[str, Any]) -> str:
    """The markdown table of a run (bench/report.py shows it in docs/benchmarks.md)."""
    lines = [
        f"**A {result['file_mb']:g} MB PDF, one call per adapter** (peak memory over the call, the file "
        'included; "eager": the base64 itself in the request, "spliced": what chainform sends)',
        "",
        "| adapter | request | traced peak MB | × file | peak RSS growth MB | × file |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        if "error" in row:
            lines.append(f"| {row['adapter']} | {row['mode']} | error: {row['error']} | | | |")
        else:
            lines.append(
                f"| {row['adapter']} | {row['mode']} | {row['traced_peak_mb']} | {row['traced_ratio']} | "
                f"{row['rss_growth_mb']} | {row['rss_ratio']} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
