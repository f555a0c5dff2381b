"""A log that cannot be used: home is a file, pages are corrupt. The answer is never lost; the
damage is said once, with the way on."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import chainform as cf
from chainform.store import Store, StoreError
from chainform.testing import ScriptedClient

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def test_home_that_is_a_file_warns_and_the_chain_still_answers(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "home-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("CHAINFORM_HOME", str(blocker))
    model = cf.Model(ScriptedClient(["first", "second"]))
    with pytest.warns(UserWarning, match=r"logging disabled: \$CHAINFORM_HOME .*home-file.* it is a file"):
        assert model.chain("x").text() == "first"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per model, not per chain
        assert model.chain("y").text() == "second"


def test_home_error_is_typed() -> None:
    from chainform._paths import home

    assert issubclass(cf.HomeError, cf.ChainformError)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHAINFORM_HOME", "/dev/null/below")
        with pytest.raises(cf.HomeError, match="cannot be chainform's home"):
            home()


def test_a_damaged_log_is_found_on_open_and_says_the_way_on(damaged_log: Path, tmp_path: Path) -> None:
    path = damaged_log
    way_on = r"is damaged .*malformed.*`chainform logs repair`.*`chainform logs backup FILE`.*logs.db-wal and logs.db-shm"
    with pytest.raises(StoreError, match=way_on):
        Store(path).check()
    with pytest.raises(StoreError, match="is damaged"):
        Store(path).recent(3)  # reads say the same, never a bare sqlite3.DatabaseError
    copy = Store(path).backup(tmp_path / "kept.db")  # the way on works on the damaged file
    assert copy.stat().st_size == path.stat().st_size


def test_a_chain_on_a_damaged_log_answers_and_says_it_was_not_logged(damaged_log: Path) -> None:
    path = damaged_log
    model = cf.Model(ScriptedClient(["the answer"]), log_path=path)
    with pytest.warns(UserWarning, match=r"^chainform: 1 call not logged: the log at .* is damaged"):
        assert model.chain("x").text() == "the answer"
        model.close()  # told once, when the log is closed (or at exit)
