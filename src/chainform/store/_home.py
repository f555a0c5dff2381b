"""Where the log lives, whether chains write it (`chainform logs off`), and its files' mode."""

from __future__ import annotations

import os
from pathlib import Path

from chainform._paths import home, private


def _off_marker() -> Path:
    return home() / "logs-off"


def logging_enabled() -> bool:
    """False after `chainform logs off`: chains then write nothing until `chainform logs on`."""
    return not _off_marker().exists()


def set_logging(enabled: bool) -> None:
    """Turn logging on or off for every chain of this user (`chainform logs on|off`)."""
    marker = _off_marker()
    if enabled:
        marker.unlink(missing_ok=True)
    else:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()


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
