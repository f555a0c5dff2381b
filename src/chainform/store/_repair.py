"""`chainform logs repair`: what SQLite can still read of a damaged log, saved into a new log.

The damaged files are never changed: the log and its `-wal` (which holds the calls committed since
the last checkpoint) are copied to a scratch folder and read there, so SQLite's recovery of the
WAL happens on the copy. Every table of the new log's schema is filled from the table of that name,
row by row in rowid order with the columns both have; a row or a run of rows on a page that cannot
be read is skipped (the reader seeks past it), and the full-text index is rebuilt by its triggers.
Then the damaged files are renamed (`logs.db.damaged-TIME`, with `-wal` and `-shm`) and the new
log takes the log's name. A log another process has open is refused: renaming files under a
writer would make its next writes fail.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from chainform.errors import StoreError
from chainform.store._advice import SIDE_FILES, check_intact, files_of, holders

_BATCH = 500
_MAX_SKIP = 62  # a seek past an unreadable row doubles its jump at most this many times (2**62 rowids)


@dataclass
class Repaired:
    """What a repair saved (rows per table) and where the damaged files went."""

    path: Path
    kept: list[Path]
    rows: dict[str, int] = field(default_factory=dict)
    skipped: int = 0  # reads that failed (a row, or a run of rows, was left behind)
    intact: bool = False  # the log passed quick_check


def repair(path: Path, *, force: bool = False, now: float | None = None) -> Repaired:
    """Save what SQLite can read of the log at `path` into a new log in its place; the damaged
    files are kept beside it under a new name. A log that passes `PRAGMA quick_check` is left as
    it is (`intact`) unless `force`. StoreError when another process has the log open, or when
    nothing of it can be read."""
    from chainform.store._store import Store

    if not path.is_file():
        raise StoreError(f"there is no log at {path} to repair")
    busy = holders(path, writers_only=False)
    if busy:
        raise StoreError(
            f"the log at {path} is open in process {', '.join(map(str, busy))}: let it finish, or "
            "stop it, then repair (its files are renamed)"
        )
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    new = path.with_name(f"{path.name}.repairing")
    for stale in files_of(new):
        stale.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="chainform-repair-") as scratch:
        copy = Path(scratch) / path.name
        for source, target in zip(files_of(path)[:2], files_of(copy)[:2], strict=True):
            if source.exists():  # the log and its WAL; SQLite rebuilds the -shm from the WAL
                shutil.copyfile(source, target)
        result = Repaired(path, [])
        try:
            old = sqlite3.connect(copy, isolation_level=None)
            check_intact(old, copy)
            result.intact = True
        except StoreError:  # damaged: what follows is what the command is for
            pass
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the log at {path}: {exc}") from exc
        if result.intact and not force:
            old.close()
            return result
        with Store(new) as fresh:
            fresh.check()  # the current schema, empty
        with contextlib.closing(old), contextlib.closing(sqlite3.connect(new, isolation_level=None)) as out:
            _copy_tables(old, out, result)
            check_intact(out, new)
    if not result.rows.get("responses") and not any(result.rows.values()):
        for leftover in files_of(new):
            leftover.unlink(missing_ok=True)
        raise StoreError(f"SQLite can read nothing of the log at {path}; it is left as it is")
    kept = _unused(path.with_name(f"{path.name}.damaged-{stamp}"))
    for source, target in zip(files_of(path), files_of(kept), strict=True):
        if source.exists():
            os.replace(source, target)
            result.kept.append(target)
    for suffix in SIDE_FILES:
        Path(f"{new}{suffix}").unlink(missing_ok=True)  # closed cleanly: checkpointed into `new`
    os.replace(new, path)
    return result


def _unused(kept: Path) -> Path:
    """`kept`, or `kept-2`, `kept-3`...: the first name none of whose files exists, so a second
    repair within the same second never replaces the damaged files an earlier one kept."""
    candidate, n = kept, 1
    while any(f.exists() or f.is_symlink() for f in files_of(candidate)):
        n += 1
        candidate = kept.with_name(f"{kept.name}-{n}")
    return candidate


def _tables(db: sqlite3.Connection) -> dict[str, list[str]]:
    """The ordinary tables of a log and their columns (the full-text index and its shadow tables
    are left out: they are made again from `responses`)."""
    names = [
        row[0]
        for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' "
            "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'responses_fts%' ORDER BY rowid"
        )
    ]
    return {name: [row[1] for row in db.execute(f'PRAGMA table_info("{name}")')] for name in names}


def _copy_tables(old: sqlite3.Connection, out: sqlite3.Connection, result: Repaired) -> None:
    try:
        before = _tables(old)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot read the tables of the log at {result.path}: {exc}") from exc
    out.execute("PRAGMA foreign_keys = OFF")  # a row whose parent was on a lost page is kept
    out.execute("BEGIN")
    for table, columns in _tables(out).items():
        common = [c for c in columns if c in before.get(table, [])]
        if not common:
            continue
        names = ", ".join(f'"{c}"' for c in common)
        insert = f'INSERT OR IGNORE INTO "{table}" ({names}) VALUES ({", ".join("?" * len(common))})'
        count = 0
        for row in _readable(old, table, names, result):
            try:
                count += out.execute(insert, row).rowcount
            except sqlite3.DatabaseError:  # a value the new schema refuses (NOT NULL, ...)
                result.skipped += 1
        result.rows[table] = count
    out.execute("COMMIT")


def _readable(
    old: sqlite3.Connection, table: str, names: str, result: Repaired
) -> Iterator[tuple[object, ...]]:
    """The rows of `table` SQLite can read, in rowid order, seeking past those it cannot."""
    sql = f'SELECT rowid, {names} FROM "{table}" WHERE rowid > ? ORDER BY rowid LIMIT ?'
    last, size, misses = -(2**63), _BATCH, 0
    while True:
        try:
            rows = old.execute(sql, (last, size)).fetchall()
        except sqlite3.DatabaseError:
            if size > 1:  # read one at a time to find the row that cannot be read
                size = 1
                continue
            if misses >= _MAX_SKIP or max(last, 0) >= 2**63 - 1 - (1 << misses):
                return
            result.skipped += 1
            last = max(last, 0) + (1 << misses)  # past it; further each time the seek fails again
            misses += 1
            continue
        if not rows:
            return
        for row in rows:
            yield tuple(row[1:])
        last, size, misses = rows[-1][0], _BATCH, 0
