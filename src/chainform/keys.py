"""API keys: an explicit argument wins, then the environment, then the user's keys file.

The keys file (`<chainform home>/keys.json`) is written atomically and readable by its owner only
(0600). Key values are never put into messages, reprs or logs: errors name the key, never its value.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

from chainform import _paths
from chainform.errors import ChainformError, MissingKeyError


def keys_path() -> Path:
    return _paths.home() / "keys.json"


def _read() -> dict[str, str]:
    path = keys_path()
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        # The exception text may quote file content (a key), so it is not chained into the message.
        raise ChainformError(f"keys file {path} is unreadable or not valid JSON; fix or delete it") from None
    if not isinstance(data, dict):
        raise ChainformError(f"keys file {path} must hold a JSON object of name -> key")
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}


def set_key(name: str, value: str) -> None:
    """Store a key under `name` (e.g. "openai"); the file is replaced atomically with mode 0600."""
    if not name or not name.strip():
        raise ValueError("key name must not be empty")
    if not value:
        raise ValueError(f"key value for {name!r} must not be empty")
    keys = _read()
    keys[name] = value
    _write(keys)


def delete_key(name: str) -> bool:
    """Forget a stored key; True when one was stored."""
    keys = _read()
    if name not in keys:
        return False
    del keys[name]
    _write(keys)
    return True


def stored_key_names() -> list[str]:
    """Names with a stored key (values are never listed)."""
    return sorted(_read())


def _write(keys: dict[str, str]) -> None:
    path = keys_path()
    fd, tmp = tempfile.mkstemp(prefix=".keys-", suffix=".json", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(keys, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.chmod(path, 0o600)


def get_key(name: str, *, explicit: str | None = None, env_var: str | None = None) -> str | None:
    """The key for `name`: `explicit` if given, else `$env_var` if set, else the keys file, else None."""
    if explicit:
        return explicit
    if env_var:
        value = os.environ.get(env_var)
        if value:
            return value
    return _read().get(name)


def require_key(name: str, *, explicit: str | None = None, env_var: str | None = None) -> str:
    """Like `get_key`, but a missing key raises `MissingKeyError` saying how to provide one."""
    value = get_key(name, explicit=explicit, env_var=env_var)
    if value:
        return value
    ways = [f"set the {env_var} environment variable"] if env_var else []
    ways += [f"run `chainform keys set {name}`", "or pass key=... to get_model()"]
    raise MissingKeyError(f"No API key for {name!r}: " + ", ".join(ways) + ".")


def redact(text: str, *secrets: str | None) -> str:
    """`text` with every given secret replaced by a fixed mask (for provider messages we re-raise)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted key]")
    return text
