"""Several `chainform` processes logging tool chains at once: every call of every chain is in the log."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from chainform.store import Store

PROCESSES = 4
CHAINS = 6

# Each process runs the real CLI entry point on a scripted model: a tool call, an answer, then the
# deferred formatting call, so one chain writes three rows (with tool calls/results and a context).
WORKER = f"""
import sys
from chainform.cli import _prompt, main
from chainform.models import Model
from chainform.testing import ScriptedClient, tool_call

worker = int(sys.argv[1])
script = []
for i in range({CHAINS}):
    script += [tool_call("current_time"), f"answer {{worker}}-{{i}}", '{{"n": %d}}' % i]
client = ScriptedClient(script)
_prompt.resolve_model = lambda name, key, base_url: Model(client, name="scripted")
for i in range({CHAINS}):
    sys.argv = ["chainform", f"worker {{worker}} chain {{i}}", "-T", "current_time",
                "--schema", "n int", "--strategy", "deferred"]
    try:
        main()
    except SystemExit as exc:
        if exc.code:
            raise
"""


def test_cli_concurrent_processes_log_every_call(home) -> None:
    env = dict(os.environ, CHAINFORM_HOME=str(home))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(w)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(PROCESSES)
    ]
    outputs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0] * PROCESSES, [o[1][-500:] for o in outputs]
    assert all(
        o[0].splitlines() == [json.dumps({"n": i}, separators=(",", ":")) for i in range(CHAINS)]
        for o in outputs
    )
    with Store() as store:
        rows = store.recent(None)
    assert len(rows) == PROCESSES * CHAINS * 3
    prompts = {r.prompt for r in rows}
    assert prompts == {f"worker {w} chain {i}" for w in range(PROCESSES) for i in range(CHAINS)}
    assert sum(1 for r in rows if r.purpose == "format" and r.format_context) == PROCESSES * CHAINS
    assert sum(len(r.tool_results) for r in rows) == PROCESSES * CHAINS
    assert len({r.conversation_id for r in rows}) == PROCESSES * CHAINS
