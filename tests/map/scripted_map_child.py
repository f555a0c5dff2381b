"""Child process of the memory test: `chainform map` in-process on a scripted model (no HTTP).

python scripted_map_child.py INPUT OUTPUT TOOLS_PY
"""

from __future__ import annotations

import collections
import json
import re
import sys

from chainform.cli import _map, cli
from chainform.models import AsyncModel
from chainform.testing import ScriptedClient, tool_call


def reply(messages, options):
    number = int(re.search(r"order (\d+)", next(m for m in messages if m.role == "user").text).group(1))
    if messages[-1].role == "tool":
        return json.dumps({"id": number, "total": number / 2})
    return tool_call("lookup", order=number)


def main() -> None:
    inp, out, tools = sys.argv[1:4]
    with open(inp) as handle:
        rows = sum(1 for _ in handle)
    client = ScriptedClient([reply] * (2 * rows))
    client.requests = collections.deque(maxlen=1)  # the test double keeps no history of its own
    _map.map_model = lambda *args, **kwargs: AsyncModel(client, name="scripted")
    argv = ["map", inp, "-o", out, "--prompt", "Extract: {text}", "--schema", "id int, total float"]
    cli([*argv, "--functions", tools, "--concurrency", "32", "-n"], standalone_mode=False)


if __name__ == "__main__":
    main()
