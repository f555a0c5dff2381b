"""How many files of src/chainform one chain runs functions in, and one model call alone.

A measure of how far a reader has to follow the code, not of speed. Both runs talk to
bench/loopback.py's `fast` server in its own process (first a tool call, then the value), with
a fresh CHAINFORM_HOME, and are traced with `sys.setprofile` and `threading.setprofile`, so
functions run on worker threads count too; each runs in a fresh process. What importing a module
runs does not count: its body, the class bodies in it and whatever they call.

- chain: the CLI, `chainform -m openai/m --base-url ... --schema 'city, temp_c float'
  --functions tools.py "Weather in Paris?"` (get_weather called once, then the value);
- model call: one streamed call (`get_streaming_response`, as the engine makes it) of the client
  `get_client("openai/m", base_url=...)` gives, built before the trace starts: the adapter's
  path from the chainform messages to the updates read back.

    python bench/trace_files.py            # prints "chain N" and "model_call N"
    python bench/trace_files.py --list     # and the files of each, one line per package
    python bench/trace_files.py --functions  # and each file with the functions run in it
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

HERE = Path(__file__).resolve().parent
TOOLS = """
def get_weather(city: str) -> dict:
    "Current weather for a city."
    return {"city": city, "temp_c": 21.5}
"""


@contextlib.contextmanager
def loopback() -> Iterator[str]:
    """bench/loopback.py's `fast` server in its own process; yields its base URL."""
    server = subprocess.Popen(
        [sys.executable, str(HERE / "loopback.py"), "fast"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline().split()
        if line[:1] != ["PORT"]:
            raise RuntimeError(f"loopback server did not start: {line!r}")
        yield f"http://127.0.0.1:{line[1]}/v1"
    finally:
        server.kill()
        server.wait()


def traced_files(run: Callable[[], Any], package: Path) -> dict[str, set[str]]:
    """The files under `package` in which `run` (and every thread it starts) calls a function, each
    with the names of the functions called in it."""
    root = str(package) + os.sep
    seen: dict[str, set[str]] = {}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if event == "call" and code.co_filename.startswith(root) and not importing(frame):
            seen.setdefault(code.co_filename[len(root) :], set()).add(code.co_name)

    def importing(frame: FrameType | None) -> bool:
        """Whether `frame` runs as part of importing a module of the package (its body, a class
        body in it, or anything those call)."""
        while frame is not None:
            if frame.f_code.co_name == "<module>" and frame.f_code.co_filename.startswith(root):
                return True
            frame = frame.f_back
        return False

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return seen


def chain_run(base_url: str, workdir: Path) -> Callable[[], Any]:
    from chainform.cli import cli

    tools = workdir / "tools.py"
    tools.write_text(TOOLS)
    argv = [
        "-m", "openai/m", "--base-url", base_url, "--key", "k",
        "--schema", "city, temp_c float", "--functions", str(tools),
        "Weather in Paris?",
    ]  # fmt: skip

    def run() -> None:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                cli.main(argv, prog_name="chainform", standalone_mode=False)
            except SystemExit as exc:
                if exc.code:
                    raise
        if '"temp_c"' not in out.getvalue():
            raise RuntimeError(f"the chain did not answer: {out.getvalue()!r}")

    return run


def model_call_run(base_url: str) -> Callable[[], Any]:
    import asyncio

    from chainform.clients.registry import get_client
    from chainform.types import Message

    client = get_client("openai/m", base_url=base_url, key="k")  # built before the trace starts

    async def call() -> None:
        updates = [u async for u in client.get_streaming_response([Message.user("Hi")])]
        await client.aclose()  # type: ignore[attr-defined]
        if not updates:
            raise RuntimeError("the model call did not answer")

    return lambda: asyncio.run(call())


def measure(name: str, url: str, home: Path) -> dict[str, list[str]]:
    """Run one of the two in this process (fresh: no thread or cache left from the other): each file
    it ran functions in, with their names."""
    import chainform

    os.environ["CHAINFORM_HOME"] = str(home)
    run = chain_run(url, home) if name == "chain" else model_call_run(url)
    seen = traced_files(run, Path(chainform.__file__).resolve().parent)
    return {file: sorted(seen[file]) for file in sorted(seen)}


def grouped(files: list[str]) -> str:
    """The files one line per package (the top-level modules under "."), each with its count."""
    packages: dict[str, list[str]] = {}
    for file in files:
        package, _, rest = file.rpartition("/")
        packages.setdefault(package or ".", []).append(rest)
    return "".join(f"  {p} ({len(names)}): {' '.join(names)}\n" for p, names in sorted(packages.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list each run's files too")
    parser.add_argument("--functions", action="store_true", help="list each file with the functions run in it")
    parser.add_argument("--one", nargs=2, metavar=("RUN", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # a child: one run, its files as JSON
        with tempfile.TemporaryDirectory() as home:
            print(json.dumps(measure(args.one[0], args.one[1], Path(home))))
        return
    with loopback() as url:
        for name in ("chain", "model_call"):
            child = subprocess.run(
                [sys.executable, __file__, "--one", name, url], capture_output=True, text=True
            )
            if child.returncode:
                sys.exit(f"the {name} run failed:\n{child.stderr}")
            files = json.loads(child.stdout.splitlines()[-1])
            print(f"{name} {len(files)}")
            if args.list:
                print(grouped(list(files)), end="")
            if args.functions:
                print("".join(f"  {file}: {' '.join(names)}\n" for file, names in files.items()), end="")


if __name__ == "__main__":
    main()
