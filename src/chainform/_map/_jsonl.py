"""OUT.jsonl as the commit record of a map run: one line per finished row, resumable exactly once.

A row counts as done when its whole line is in the file: each line goes out in one append-mode
write, so after `kill -9` the file holds complete lines and at most one torn last line, which
resume cuts off (that row simply runs again). Each line carries the run id and the row's key
under `_map`, so resume needs nothing but the file itself.

A resume retries the rows whose line holds an error (unless told to keep them), and always looks
again at a row whose chain was waiting for approval (a resume of its chain sends nothing while it
still waits): before any row runs, their lines are dropped from the file in one atomic replace, so
the row is simply not done yet, and its new line (the success, or the error again) is the only one
it will have.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python

from chainform._map._results import MapResult
from chainform.errors import ChainformError

META = "_map"


class MapOutputError(ChainformError):
    """OUT.jsonl cannot be resumed (a damaged line) or would be overwritten without --resume."""


class MapWriteError(MapOutputError):
    """OUT.jsonl could not be written (a full disk, a read-only file or folder, ...): the message
    names the file, the error's type and how to resume once it can be written."""


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
        "cost": None if result.usage.cost is None else str(result.usage.cost),  # USD; None: unknown
    }
    if result.model is not None:
        out[META]["model"] = result.model
    if result.retried:
        out[META]["retried"] = result.retried
    return out


class JsonlSink:
    """Appends finished rows to OUT.jsonl; `prepare(resume=True)` reads back which keys are done."""

    def __init__(self, path: str | Path, resume_hint: str = "run the same command with --resume") -> None:
        self.path = Path(path)
        self.resume_hint = resume_hint  # how to go on once the file can be written again
        self.written = 0  # lines appended by this run
        self.done: set[str] = set()
        self.run_id: str | None = None
        self.failed_before = 0  # error rows kept as done (retry_errors=False)
        self.retried = 0  # error rows whose lines were dropped to run again
        self._fd: int | None = None

    def prepare(self, *, resume: bool, retry_errors: bool = True) -> None:
        """Scan an existing file (resume) or refuse to overwrite one; then open for appending.

        With `retry_errors` the rows that ended in an error are not done: their lines go.
        A file that cannot be read or written raises MapWriteError."""
        try:
            self._prepare(resume=resume, retry_errors=retry_errors)
        except OSError as exc:
            raise self._failed(exc) from None

    def _failed(self, exc: OSError) -> MapWriteError:
        what = exc.strerror or str(exc)
        if exc.filename is not None and str(exc.filename) != str(self.path):
            what += f": {exc.filename}"  # e.g. the copy a resume rewrites OUT through
        kept = len(self.done) + self.written
        return MapWriteError(
            f"cannot write the output {self.path} ({type(exc).__name__}: {what}); it keeps the {kept} "
            f"finished row{'s' if kept != 1 else ''} written before: once it can be written, {self.resume_hint}"
        )

    def _prepare(self, *, resume: bool, retry_errors: bool) -> None:
        if self.path.is_dir():
            raise MapOutputError(f"{self.path} is a directory: give a file, e.g. {self.path / 'out.jsonl'}")
        if self.path.exists() and self.path.stat().st_size > 0:
            if not resume:
                raise MapOutputError(
                    f"{self.path} already holds rows: pass --resume to continue that run, "
                    "or choose another output file"
                )
            failed, waiting = self._scan()
            if retry_errors:
                self.retried = len(failed)
            else:
                self.done |= failed
                self.failed_before = len(failed)
                failed = set()
            if failed or waiting:
                self._drop(failed | waiting)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def _scan(self) -> tuple[set[str], set[str]]:
        """Read the done keys into `done`; return the keys whose (only) line is an error, and those
        whose line says the row's chain waits for approval."""
        failed: set[str] = set()
        waiting: set[str] = set()
        with open(self.path, "rb+") as handle:
            offset = 0
            for number, raw in enumerate(handle, 1):
                if not raw.endswith(b"\n"):  # torn by a kill mid-write: that row runs again
                    handle.truncate(offset)
                    break
                offset += len(raw)
                if not raw.strip():
                    continue
                key, error = self._parse(raw, number)
                (self.done if error is None else waiting if error == "waiting" else failed).add(key)
        return failed - self.done, waiting - self.done

    def _parse(self, raw: bytes, number: int) -> tuple[str, str | None]:
        """The row's key and, for an error line, its phase ("error" when it names none)."""
        try:
            line = json.loads(raw)
            meta = line[META]
            key = str(meta["key"])
        except (ValueError, KeyError, TypeError):
            raise MapOutputError(
                f"{self.path} line {number} is not a chainform map row; cannot resume"
            ) from None
        self.run_id = self.run_id or meta.get("run")
        if "error" not in line:
            return key, None
        error = line["error"]
        return key, str(error.get("phase") or "error") if isinstance(error, dict) else "error"

    def _drop(self, keys: set[str]) -> None:
        """Rewrite the file without the lines of `keys`: a copy, synced, then renamed over it."""
        temp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            with open(self.path, "rb") as source, open(temp, "wb") as target:
                for number, raw in enumerate(source, 1):
                    if raw.strip() and self._parse(raw, number)[0] in keys:
                        continue
                    target.write(raw)
                target.flush()
                os.fsync(target.fileno())
            os.replace(temp, self.path)
        finally:
            temp.unlink(missing_ok=True)
        _sync_dir(self.path.parent)

    def commit(self, line: dict[str, Any]) -> None:
        """Append one row in a single write (never a half line from us)."""
        if self._fd is None:
            raise RuntimeError("JsonlSink.prepare() first")
        try:
            data = to_json(line, fallback=str) + b"\n"  # one pass, in pydantic_core
        except PydanticSerializationError:  # lone surrogates in model text: JSON's own \u escapes
            text = json.dumps(to_jsonable_python(line, fallback=str), ensure_ascii=False) + "\n"
            data = text.encode("utf-8", "backslashreplace")
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:  # a torn line is cut off by the resume: that row runs again
            raise self._failed(exc) from None
        self.written += 1

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):  # nothing is buffered: every line went out in commit
                os.close(fd)


def _sync_dir(path: Path) -> None:
    """Make a rename durable (a directory's entry is only on disk once the directory is synced)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
