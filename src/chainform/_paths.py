"""Where chainform keeps its files. `CHAINFORM_HOME` overrides everything (tests rely on it)."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """User data dir: the log database, keys file and saved schemas live here."""
    override = os.environ.get("CHAINFORM_HOME")
    if override:
        path = Path(override).expanduser()
    else:
        import platformdirs

        path = Path(platformdirs.user_data_dir("chainform", appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_dir() -> Path:
    """Large re-creatable files (converted model weights). `CHAINFORM_CACHE` overrides."""
    override = os.environ.get("CHAINFORM_CACHE")
    if override:
        path = Path(override).expanduser()
    else:
        import platformdirs

        path = Path(platformdirs.user_cache_dir("chainform", appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path
