import pytest


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    """Every map test logs into its own throwaway database."""
    monkeypatch.setenv("CHAINFORM_HOME", str(tmp_path / "home"))
