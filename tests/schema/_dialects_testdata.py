"""Where the shared conformance data lives (beside the repository), and a skip when it is absent."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

_REPO = Path(__file__).resolve().parents[2]
# ../shared/data beside the checkout (a worktree may sit one level deeper).
DATA = next(
    (p / "shared" / "data" for p in _REPO.parents if (p / "shared" / "data").is_dir()),
    _REPO.parent / "shared" / "data",
)


def data_dir(name: str) -> Path:
    """`../shared/data/<name>`, or skip the test when this checkout has no shared data."""
    path = (DATA / name).resolve()
    if not path.is_dir():
        pytest.skip(f"shared conformance data not found: {path}")
    return path


def bench_sample(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """A fixed random sample of JSONSchemaBench-dev documents (schema + labelled instances)."""
    files = sorted(data_dir("jsonschemabench-dev").glob("*/*.json"))
    picked = random.Random(seed).sample(files, min(n, len(files)))
    return [{"name": p.stem, **json.loads(p.read_text())} for p in picked]
