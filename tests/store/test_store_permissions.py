"""The log and keys are the user's alone: CHAINFORM_HOME 0700, its files 0600, older 0644 files tightened."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from chainform import keys
from chainform.store import Store

pytestmark = [pytest.mark.skipif(os.name != "posix", reason="POSIX file modes"), pytest.mark.unit]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "home" / "chainform"
    monkeypatch.setenv("CHAINFORM_HOME", str(target))
    return target


def test_new_home_db_and_side_files_are_private(home: Path) -> None:
    old = os.umask(0o022)
    try:
        store = Store()
        store._connect()
        store.close()
        keys.set_key("openai", "sk-test-private")
    finally:
        os.umask(old)
    assert _mode(home) == 0o700
    files = [p for p in home.iterdir() if p.name.startswith(("logs.db", "keys.json"))]
    assert any(p.name == "logs.db" for p in files)
    for path in files:
        assert _mode(path) == 0o600, path.name


def test_existing_world_readable_files_are_tightened_on_open(home: Path) -> None:
    home.mkdir(parents=True, mode=0o755)
    os.chmod(home, 0o755)
    Store(home / "logs.db")._connect()
    for name in ("logs.db", "logs.db-wal", "logs.db-shm"):
        if (home / name).exists():
            os.chmod(home / name, 0o644)
    (home / "keys.json").write_text('{"openai": "sk-old"}\n')
    os.chmod(home / "keys.json", 0o644)

    store = Store()
    store._connect()
    store.close()
    assert keys.get_key("openai") == "sk-old"
    assert _mode(home) == 0o700
    assert _mode(home / "logs.db") == 0o600
    assert _mode(home / "keys.json") == 0o600
