"""API keys: an explicit argument wins, then the environment, then the user's keys file.

The keys file (`<chainform home>/keys.json`) is written atomically and readable by its owner only
(0600). Key values are never put into messages, reprs or logs: errors name the key, never its value.
As a second line of defence every key value this process has loaded (and every password in a
base URL) is remembered, and `redact`/`scrub` mask them wherever text leaves chainform: tool
results and errors before they go to a model, provider errors, and every row of the log.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

from chainform import _paths
from chainform.errors import ChainformError, MissingKeyError

MASK = "[redacted key]"
_MIN_SECRET = 6  # shorter values would mask ordinary words; real keys are far longer
_URL_CREDENTIALS = re.compile(r"(?<=://)[^/\s@'\"]+@")  # user:password@ or token@
# a name that holds a credential: `api-key`, `X-Goog-Api-Key`, `Authorization`, `?token=`, `sig=`...
_SECRET_NAME = re.compile(r"key|token|secret|passw|auth|sig|credential|cookie", re.IGNORECASE)
# `?api-key=VALUE` / `&token=VALUE` in a URL's query: the value masked even when never loaded (the
# name's length is bounded, so text of many `?` or `&` costs linear time, not quadratic)
_QUERY_SECRET = re.compile(
    r"(?<=[?&])([^=&?/\s#'\"]{0,40}(?:key|token|secret|passw|auth|sig|credential)[^=&?/\s#'\"]{0,40}=)[^&\s#'\"]+",
    re.IGNORECASE,
)
_loaded: set[str] = set()
_longest_first: tuple[str, ...] = ()  # _loaded sorted once per change, not once per string masked
_lock = threading.Lock()
T = TypeVar("T")


def remember(*values: str | None) -> None:
    """Add secret values to the set `redact` masks (keys are added when loaded; tests plant their own)."""
    global _longest_first
    with _lock:
        _loaded.update(v for v in values if v and len(v) >= _MIN_SECRET)
        _longest_first = tuple(sorted(_loaded, key=len, reverse=True))


def remember_url(url: str | None) -> None:
    """Remember the password of a ``scheme://user:password@host/`` URL (a credential like a key), and
    the values of its query's credential parameters (`?api-key=K`, `?token=T`)."""
    if url and "@" in url:
        with contextlib.suppress(ValueError):
            parts = urlsplit(url)
            if parts.password:
                remember(parts.password, unquote(parts.password))
            if parts.username is not None:
                # the HTTP client sends the userinfo as `Authorization: Basic base64(user:password)`;
                # that header text turns up in errors and tracebacks, so it is masked like the password
                user, password = unquote(parts.username), unquote(parts.password or "")
                remember(*_basic_forms(f"{user}:{password}"))
    if url and "?" in url:
        with contextlib.suppress(ValueError):
            remember(*(value for name, value in parse_qsl(urlsplit(url).query) if _SECRET_NAME.search(name)))


def remember_headers(settings: Mapping[str, Any] | None) -> None:
    """Remember credential values given as headers anywhere in a client's settings (`default_headers=
    {"api-key": K}`, `{"X-Goog-Api-Key": K}`, `Authorization: Bearer K`), so they are masked like keys."""
    for name, value in (settings or {}).items():
        if isinstance(value, Mapping):
            remember_headers(value)
        elif isinstance(value, str) and _SECRET_NAME.search(str(name)):
            remember(value, value.partition(" ")[2] or None)


def check_base_url(url: str | None) -> None:
    """A base URL with a query is refused: a client joins its paths after the query
    (`/v1/?api-key=K/chat/completions`), so a key there would be sent in the wrong place and logged."""
    if url and urlsplit(url).query:
        raise ValueError(
            "base_url must not carry a query (?...): give a key with key= (or default_headers=) "
            "and other parameters through the provider's settings"
        )


def _basic_forms(userinfo: str) -> tuple[str, ...]:
    """The Basic credential as it travels (base64 of `user:password`), with and without padding."""
    import base64

    token = base64.b64encode(userinfo.encode()).decode()
    return (token, token.rstrip("="))


def url_has_credentials(url: str | None) -> bool:
    """Whether `url` carries `user[:password]@` (the HTTP client then authenticates with it)."""
    if not url or "@" not in url:
        return False
    try:
        return urlsplit(url).username is not None
    except ValueError:
        return False


def mentions_secret(text: str) -> bool:
    """Whether `redact(text)` would mask anything (a loaded key, or URL credentials) in `text`."""
    if "://" in text and "@" in text:
        return True
    if "=" in text and _QUERY_SECRET.search(text):
        return True
    return any(secret in text for secret in _longest_first)


def redact(text: str, *secrets: str | None) -> str:
    """`text` with every given secret, every loaded key and URL credentials replaced by a mask."""
    extra = [s for s in secrets if s and len(s) >= 4]
    candidates = sorted({*_longest_first, *extra}, key=len, reverse=True) if extra else _longest_first
    if "://" in text and "@" in text:
        text = _URL_CREDENTIALS.sub(MASK + "@", text)
    if "=" in text:
        text = _QUERY_SECRET.sub(lambda found: found.group(1) + MASK, text)
    for secret in candidates:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def scrub(value: T) -> T:
    """`redact` applied to every string inside `value` (str, list, tuple, dict); the same object back
    when nothing needed masking, so a str subclass keeps its attributes."""
    if isinstance(value, str):
        masked = redact(value)
        return value if masked == value else masked  # type: ignore[return-value]
    if isinstance(value, list | tuple):
        items = [scrub(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items) if isinstance(value, list) else tuple(items)  # type: ignore[return-value]
    if isinstance(value, dict):
        pairs = [(scrub(k), scrub(v)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)  # type: ignore[return-value]
    return value


def keys_path() -> Path:
    return _paths.home() / "keys.json"


def _read() -> dict[str, str]:
    path = keys_path()
    if not path.exists():
        return {}
    _paths.private(path, 0o600)
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
    remember(value)


def delete_key(name: str) -> bool:
    """Forget a stored key; True when one was stored."""
    keys = _read()
    if name not in keys:
        return False
    del keys[name]
    _write(keys)
    return True


def stored_key(name: str) -> str | None:
    """The key stored under `name` in the keys file (not the environment's), or None."""
    value = _read().get(name)
    remember(value)
    return value


def stored_key_names() -> list[str]:
    """Names with a stored key (values are never listed)."""
    return sorted(_read())


def _write(keys: dict[str, str]) -> None:
    _paths.write_private_json(keys_path(), keys)


def get_key(name: str, *, explicit: str | None = None, env_var: str | None = None) -> str | None:
    """The key for `name`: `explicit` if given, else `$env_var` if set, else the keys file, else None."""
    if explicit:
        remember(explicit)
        return explicit
    if env_var:
        value = os.environ.get(env_var)
        if value:
            remember(value)
            return value
    return stored_key(name)


def require_key(name: str, *, explicit: str | None = None, env_var: str | None = None) -> str:
    """Like `get_key`, but a missing key raises `MissingKeyError` saying how to provide one."""
    value = get_key(name, explicit=explicit, env_var=env_var)
    if value:
        return value
    ways = [f"set the {env_var} environment variable"] if env_var else []
    ways += [f"run `chainform keys set {name}`", "or pass key=... to get_model()"]
    error = MissingKeyError(f"No API key for {name!r}: " + ", ".join(ways) + ".")
    error.key_name, error.env_var = name, env_var
    raise error
