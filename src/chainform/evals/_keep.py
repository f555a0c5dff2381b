"""Where an eval keeps its work: a folder per eval under chainform's home (`evals/ID/`).

Why files and not a table in the log: each cell's rows are written by the map's own commit record
(one JSONL line per finished row, resumable exactly once after a kill -9), and the report is one
JSON document read whole by `chainform eval show`; the log keeps the calls themselves, which the
report links by call id. The folder holds `spec.json` (what was asked, to find an eval to resume),
`cell-N.jsonl` (the map runs) and `report.json` (the last report).
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

from chainform._paths import home, home_path
from chainform.evals._errors import EvalInputError
from chainform.evals._eval_report import EvalReport

MAX_REPORT_BYTES = 512 * 1024 * 1024
"""A report.json larger than this is refused on reading (a damaged or foreign file)."""


def eval_dir(eval_id: str, *, create: bool = False) -> Path:
    if not eval_id or any(ch in eval_id for ch in "/\\."):
        raise EvalInputError(f"{eval_id!r} is not an eval id")
    path = (home() if create else home_path()) / "evals" / eval_id
    if create:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def save_spec(eval_id: str, spec: dict[str, Any]) -> None:
    _write(eval_dir(eval_id, create=True) / "spec.json", spec)


def find_resumable(spec: dict[str, Any]) -> str | None:
    """The newest eval asked with exactly `spec` (same data, schema, prompts, models, strategies)."""
    root = home_path() / "evals"
    if not root.is_dir():
        return None
    found: list[tuple[float, str]] = []
    for path in root.iterdir():
        spec_file = path / "spec.json"
        try:
            if json.loads(spec_file.read_text(encoding="utf-8")) == spec:
                found.append((spec_file.stat().st_mtime, path.name))
        except (OSError, ValueError):
            continue
    return max(found)[1] if found else None


def kept_settings(eval_id: str) -> dict[str, Any]:
    """The settings of the eval's kept report (empty when it has none yet, or it cannot be read)."""
    path = eval_dir(eval_id) / "report.json"
    try:
        if path.stat().st_size > MAX_REPORT_BYTES:
            return {}
        settings = json.loads(path.read_text(encoding="utf-8")).get("settings")
    except (OSError, ValueError, AttributeError):
        return {}
    return settings if isinstance(settings, dict) else {}


def spent(eval_id: str) -> Decimal:
    """USD the eval's committed rows cost (its cells' and its judge's; rows of unknown cost add 0)."""
    from chainform.evals._cells import read_lines

    total = Decimal(0)
    for path in sorted(eval_dir(eval_id).glob("*.jsonl")):
        for line in read_lines(path).values():
            cost = line.get("_map", {}).get("cost")
            if cost is not None:
                total += Decimal(str(cost))
    return total


def save_report(report: EvalReport) -> Path:
    path = eval_dir(report.eval_id, create=True) / "report.json"
    _write(path, report.to_dict())
    return path


def load_report(eval_id: str) -> EvalReport:
    """The kept report of `eval_id` (a unique prefix is enough)."""
    root = home_path() / "evals"
    matches = sorted(p.name for p in root.iterdir() if p.name.startswith(eval_id)) if root.is_dir() else []
    matches = [m for m in matches if (root / m / "report.json").is_file()]
    if len(matches) != 1:
        raise EvalInputError(
            f"no kept eval {eval_id!r}"
            if not matches
            else f"{eval_id!r} names {len(matches)} evals; give more of the id"
        )
    path = root / matches[0] / "report.json"
    if path.stat().st_size > MAX_REPORT_BYTES:
        raise EvalInputError(f"{path} is larger than {MAX_REPORT_BYTES} bytes; not an eval report")
    try:
        return EvalReport.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError) as exc:
        raise EvalInputError(f"{path} is not a readable eval report: {exc}") from None


def kept_evals() -> list[tuple[str, float]]:
    """Every eval with a kept report: (id, when its report was written), newest first."""
    root = home_path() / "evals"
    if not root.is_dir():
        return []
    found = []
    for path in root.iterdir():
        try:
            found.append((path.name, (path / "report.json").stat().st_mtime))
        except OSError:  # no report (yet): an eval killed before its first report
            continue
    return sorted(found, key=lambda item: item[1], reverse=True)


def _write(path: Path, data: Any) -> None:
    """Write whole or not at all: a copy, then renamed over the old file."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(data, default=str), encoding="utf-8")
    os.replace(temp, path)


__all__ = [
    "eval_dir",
    "find_resumable",
    "kept_evals",
    "kept_settings",
    "load_report",
    "save_report",
    "save_spec",
    "spent",
]
