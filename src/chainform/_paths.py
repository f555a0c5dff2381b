"""Where chainform keeps its files (its home, the log, the cache) and their modes; whether chains
write the log (`chainform logs off`). `CHAINFORM_HOME` overrides everything (tests rely on it)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def _located(env_var: str, kind: str) -> Path:
    """`$env_var` if set, else platformdirs' user directory of `kind` ("data" or "cache")."""
    override = os.environ.get(env_var)
    if override:
        return Path(override).expanduser()
    import platformdirs

    locate = platformdirs.user_data_dir if kind == "data" else platformdirs.user_cache_dir
    return Path(locate("chainform", appauthor=False))


def _directory(env_var: str, kind: str) -> Path:
    """`_located(env_var, kind)`, created."""
    override = os.environ.get(env_var)
    path = _located(env_var, kind)
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        from chainform.errors import HomeError

        where = f"${env_var}" if override else "the user data directory"
        why = "it is a file" if path.is_file() else exc.strerror or str(exc)
        raise HomeError(f"{where} ({path}) cannot be chainform's home: {why}; give a directory") from None
    if kind == "data":
        private(path, 0o700)
    return path


def private(path: Path, mode: int) -> None:
    """Take group and other access away from `path` when it has any (the log and keys are the user's alone).

    Files created before chainform tightened its home were 0644; the first open fixes them.
    """
    try:
        current = path.stat().st_mode
        if current & 0o077:
            os.chmod(path, mode)
    except OSError:  # not ours, or gone: the open that follows reports what matters
        pass


def home() -> Path:
    """User data dir: the log database, keys file and saved schemas live here."""
    return _directory("CHAINFORM_HOME", "data")


def home_path() -> Path:
    """Where `home()` is, without making it (for reads that find nothing when it is missing)."""
    return _located("CHAINFORM_HOME", "data")


def cache_dir() -> Path:
    """Large re-creatable files (converted model weights). `CHAINFORM_CACHE` overrides."""
    return _directory("CHAINFORM_CACHE", "cache")


OFF_MARKER = "logs-off"
"""The file in chainform's home whose presence turns the log off."""


def logging_enabled() -> bool:
    """False after `chainform logs off`: chains then write nothing until `chainform logs on`.
    Only looks for the marker: a home that does not exist yet is not made for that."""
    return not (home_path() / OFF_MARKER).exists()


def set_logging(enabled: bool) -> None:
    """Turn logging on or off for every chain of this user (`chainform logs on|off`)."""
    if enabled:
        (home_path() / OFF_MARKER).unlink(missing_ok=True)
    else:
        (home() / OFF_MARKER).touch()


def default_path() -> Path:
    """`<chainform home>/logs.db`; `CHAINFORM_HOME` moves it."""
    return home() / "logs.db"


def create_private(path: Path) -> None:
    """Create the log 0600 before SQLite does (its -wal and -shm files copy the database's mode), and
    tighten a log and its side files left readable by others by an older chainform."""
    # Only a file that does not exist yet is opened here: closing a second descriptor of a database
    # this process already has open would drop SQLite's POSIX locks on it.
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass
    except OSError:
        return  # sqlite3 reports it below
    for suffix in ("", "-wal", "-shm", "-journal", "-spool"):
        private(Path(f"{path}{suffix}"), 0o600)


def write_private_json(path: Path, data: Any) -> None:
    """Write `data` as JSON to `path` (mode 0600) whole or not at all: a temporary file in the same
    folder, renamed over the old one, so a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".json", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True, ensure_ascii=False)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.chmod(path, 0o600)
