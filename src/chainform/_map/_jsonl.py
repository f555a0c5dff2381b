"""OUT.jsonl as the commit record of a map run: one line per finished row, resumable exactly once.

A row counts as done when its whole line is in the file: each line goes out in one append-mode
write, so after `kill -9` the file holds complete lines and at most one torn last line, which
resume cuts off (that row simply runs again). Each line carries the run id and the row's key
under `_map`, so resume needs nothing but the file itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic_core import to_jsonable_python

from chainform.errors import ChainformError
from chainform.map import MapResult

META = "_map"


class MapOutputError(ChainformError):
    """OUT.jsonl cannot be resumed (a damaged line) or would be overwritten without --resume."""


def line_for(result: MapResult, run_id: str, record: dict[str, Any]) -> dict[str, Any]:
    """The output line: the input row, then `value` or `error`, then `_map` bookkeeping."""
    out = dict(record)
    if result.error is not None:
        out["error"] = result.error.to_dict()
    else:
        out["value"] = result.data if result.data is not None else result.text
    out[META] = {
        "run": run_id,
        "key": result.key,
        "index": result.index,
        "conversation_id": result.conversation_id,
        "tokens": result.usage.total_tokens or 0,
    }
    return out


class JsonlSink:
    """Appends finished rows to OUT.jsonl; `resume()` reads back which keys are already done."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.done: set[str] = set()
        self.run_id: str | None = None
        self.failed_before = 0
        self._fd: int | None = None

    def prepare(self, *, resume: bool) -> None:
        """Scan an existing file (resume) or refuse to overwrite one; then open for appending."""
        if self.path.exists() and self.path.stat().st_size > 0:
            if not resume:
                raise MapOutputError(
                    f"{self.path} already holds rows: pass --resume to continue that run, "
                    "or choose another output file"
                )
            self._scan()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def _scan(self) -> None:
        with open(self.path, "rb+") as handle:
            offset = 0
            for number, raw in enumerate(handle, 1):
                if not raw.endswith(b"\n"):  # torn by a kill mid-write: that row runs again
                    handle.truncate(offset)
                    break
                offset += len(raw)
                if not raw.strip():
                    continue
                try:
                    line = json.loads(raw)
                    meta = line[META]
                    key = str(meta["key"])
                except (ValueError, KeyError, TypeError):
                    raise MapOutputError(
                        f"{self.path} line {number} is not a chainform map row; cannot resume"
                    ) from None
                self.run_id = self.run_id or meta.get("run")
                self.done.add(key)
                if "error" in line:
                    self.failed_before += 1

    def commit(self, line: dict[str, Any]) -> None:
        """Append one row in a single write (never a half line from us)."""
        if self._fd is None:
            raise RuntimeError("JsonlSink.prepare() first")
        data = (json.dumps(to_jsonable_python(line, fallback=str), ensure_ascii=False) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
