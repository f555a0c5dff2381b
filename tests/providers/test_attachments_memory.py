"""Sending a large PDF costs at most the file plus one base64 copy (issue 25: peak <= 3x the file).

Measured in a child process per adapter (tracemalloc from before the file's bytes exist), against
an emulator in this process, so the emulator's own copies are not counted. Before inline data was
spliced into the body as it is sent (clients/_splice.py), each SDK held about six copies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chainform.testing.emulator import Emulator

SIZE = 8_000_000
CHILD = r"""
import asyncio, json, sys, tracemalloc
from chainform.types import DataContent, MediaSupport, Message, TextContent

name, url, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
if name == "openai":
    from chainform.clients.openai_chat import create_client
    client = create_client("gpt-4.1", key="sk-test", base_url=url + "/v1", max_retries=0)
elif name == "anthropic":
    from chainform.clients.anthropic import create_client
    client = create_client("claude-sonnet-4-5", key="sk-ant-test", base_url=url, max_retries=0)
elif name == "gemini":
    from chainform.clients.gemini import create_client
    client = create_client("gemini-2.5-flash", key="g-test", base_url=url, max_retries=0)
else:
    from chainform.clients.bedrock import create_client
    client = create_client("anthropic.claude-sonnet-4-5-20250929-v1:0", base_url=url, region="us-east-1",
                           max_retries=0, aws_access_key_id="AKIDTEST", aws_secret_access_key="secret")
client.endpoint.profile = client.profile.replace(media=MediaSupport(types=frozenset({"application/pdf"})))

async def send(data):
    turn = Message.user([TextContent("Summarise."), DataContent(data, "application/pdf", name="big.pdf")])
    await client.get_response([turn])

async def main():
    await send(bytes(100))  # imports, connections
    tracemalloc.start()
    await send(bytes(size))
    print(json.dumps(tracemalloc.get_traced_memory()[1]))
    await client.aclose()

asyncio.run(main())
"""


@pytest.mark.parametrize("adapter", ["openai", "anthropic", "gemini", "bedrock"])
def test_peak_memory_sending_a_large_pdf_is_under_three_times_the_file(adapter: str) -> None:
    src = Path(__file__).resolve().parents[2] / "src"
    with Emulator(default="ok") as emu:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, adapter, emu.base_url, str(SIZE)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(src)},
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert len(emu.requests[-1].media[0].data or b"") == SIZE  # the whole file arrived
    peak = json.loads(done.stdout.strip().splitlines()[-1])
    assert peak <= 3 * SIZE, f"{adapter}: peak {peak / SIZE:.2f}x the file"
