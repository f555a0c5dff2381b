"""The keys file: 0600, atomic writes, precedence, clear errors, and keys never shown."""

from __future__ import annotations

import json
import logging
import stat

import pytest

from chainform import keys
from chainform.errors import ChainformError, MissingKeyError

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

SECRET = "sk-very-secret-value-42"


@pytest.fixture(autouse=True)
def _no_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_PROVIDER_KEY", raising=False)


def test_registry_keys_file_is_private_and_atomic() -> None:
    keys.set_key("openai", SECRET)
    path = keys.keys_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"openai": SECRET}
    keys.set_key("anthropic", "other")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["keys.json"]  # no temp files left
    assert keys.stored_key_names() == ["anthropic", "openai"]
    assert keys.delete_key("anthropic") and not keys.delete_key("anthropic")


def test_registry_keys_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    assert keys.get_key("p", env_var="MY_PROVIDER_KEY") is None
    keys.set_key("p", "from-file")
    assert keys.get_key("p", env_var="MY_PROVIDER_KEY") == "from-file"
    monkeypatch.setenv("MY_PROVIDER_KEY", "from-env")
    assert keys.get_key("p", env_var="MY_PROVIDER_KEY") == "from-env"
    assert keys.get_key("p", explicit="explicit", env_var="MY_PROVIDER_KEY") == "explicit"


def test_registry_missing_key_error_names_the_ways_to_set_one() -> None:
    with pytest.raises(MissingKeyError) as info:
        keys.require_key("gemini", env_var="GEMINI_API_KEY")
    message = str(info.value)
    assert "GEMINI_API_KEY" in message and "chainform keys set gemini" in message


def test_registry_key_values_never_leak(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        keys.set_key("openai", SECRET)
        keys.get_key("openai")
    keys.keys_path().write_text('{"openai": "' + SECRET + '"')  # broken JSON
    with pytest.raises(ChainformError) as info:
        keys.get_key("openai")
    assert SECRET not in str(info.value) and info.value.__cause__ is None
    assert SECRET not in caplog.text
    assert keys.redact(f"bad key {SECRET}!", SECRET) == "bad key [redacted key]!"


def test_registry_keys_reject_empty_values() -> None:
    with pytest.raises(ValueError):
        keys.set_key("openai", "")
    with pytest.raises(ValueError):
        keys.set_key(" ", "x")
