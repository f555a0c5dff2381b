"""Defence in depth: a loaded key that reaches a tool result, a tool error, a provider error or the
log is masked before it is sent to a model or written; so is a password in a base URL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import chainform as cf
from chainform import keys
from chainform.testing import ScriptedClient, tool_call
from chainform.types import ModelProfile

PLANTED = "cf-planted-key-5f0c1d2e"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CHAINFORM_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _log_text(home: Path) -> str:
    """Every value of every table of the log, and its spool's records, as one string."""
    db = sqlite3.connect(home / "logs.db")
    spool = home / "logs.db-spool"
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        text = "\n".join(repr(row) for t in tables for row in db.execute(f'SELECT * FROM "{t}"'))
    finally:
        db.close()
    return text + (spool.read_text() if spool.exists() else "")


def test_redact_masks_loaded_keys_and_url_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CF_TEST_PROVIDER_KEY", PLANTED)
    assert keys.get_key("cf-test", env_var="CF_TEST_PROVIDER_KEY") == PLANTED  # loading remembers it
    assert keys.redact(f"echo {PLANTED}!") == f"echo {keys.MASK}!"
    url = "http://alice:hunter2-pass@proxy.example:8080/v1"
    assert keys.redact(f"401 for {url}") == f"401 for http://{keys.MASK}@proxy.example:8080/v1"
    keys.remember_url("https://bob:s3cr%40t-value@host/v1")
    assert keys.redact("password was s3cr@t-value") == f"password was {keys.MASK}"
    assert keys.redact("short words like key stay") == "short words like key stay"
    nested = {"a": [PLANTED, ("x", PLANTED)], PLANTED: 1, "n": 3}
    assert keys.scrub(nested) == {"a": [keys.MASK, ("x", keys.MASK)], keys.MASK: 1, "n": 3}
    clean = {"a": ["x"]}
    assert keys.scrub(clean) is clean


def test_key_in_tool_results_and_errors_never_reaches_the_model_or_log(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys.remember(PLANTED)

    def leak() -> str:
        """Returns a secret."""
        return f"the key is {PLANTED}"

    def fail() -> str:
        """Raises with a secret in the message."""
        raise RuntimeError(f"auth failed with {PLANTED}")

    client = ScriptedClient(
        [[tool_call("leak"), tool_call("fail")], "done"],
        ModelProfile(supports_tools=True),
    )
    chain = cf.Model(client).chain("go", tools=[leak, fail])
    assert chain.text() == "done"
    sent = repr(client.requests[-1][0])
    assert PLANTED not in sent and keys.MASK in sent
    assert "RuntimeError: auth failed with [redacted key]" in sent
    logged = _log_text(home)
    assert PLANTED not in logged and keys.MASK in logged


def test_python_tool_output_is_masked_on_its_way_to_the_model(home: Path) -> None:
    keys.remember(PLANTED)
    code = "k = 'cf-planted-' + 'key-5f0c1d2e'\nprint(k)"
    client = ScriptedClient([tool_call("python", code=code), "ok"], ModelProfile(supports_tools=True))
    chain = cf.Model(client).chain("go", tools=[cf.tools.python])
    assert chain.text() == "ok"
    sent = repr(client.requests[-1][0])
    assert PLANTED not in sent and keys.MASK in sent
    assert PLANTED not in _log_text(home)


def test_provider_error_with_base_url_credentials_is_masked(home: Path) -> None:
    from chainform.testing.emulator import Emulator, Fault

    echoed = "invalid password url-pass-77f3 for http://alice:url-pass-77f3@proxy/v1"
    with Emulator([Fault(401, message=echoed)]) as emu:
        url = emu.base_url.replace("http://", "http://alice:url-pass-77f3@") + "/v1"
        model = cf.get_model("openai/gpt-4.1-mini", base_url=url)  # a key beside userinfo is refused
        with pytest.raises(cf.ProviderError) as info:
            model.prompt("hi").text()
    assert "invalid password [redacted key] for http://[redacted key]@proxy/v1" in str(info.value)
    assert "url-pass-77f3" not in _log_text(home)


@pytest.mark.parametrize("where", ["argument", "environment", "keys file"])
def test_key_loaded_from_each_place_is_masked_end_to_end(
    where: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key a provider client loaded (explicit/--key, $OPENAI_API_KEY, keys.json) and a tool that
    hands it back: the next request to the provider and the log carry only the mask."""
    from chainform.testing.emulator import Emulator

    secret = f"sk-cf-planted-{where.replace(' ', '-')}-e2e-91c4"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    if where == "environment":
        monkeypatch.setenv("OPENAI_API_KEY", secret)
    elif where == "keys file":
        keys.set_key("openai", secret)

    def reveal() -> str:
        """Hands back the key, as a compromised tool might."""
        return f"key={secret}"

    with Emulator([tool_call("reveal"), "done"]) as emu:
        model = cf.get_model(
            "openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key=secret if where == "argument" else None
        )
        assert model.chain("go", tools=[reveal]).text() == "done"
        second = repr(emu.requests[-1].body)
    assert secret not in second and keys.MASK in second
    assert secret not in _log_text(home)


def test_basic_credential_from_base_url_is_masked_and_key_beside_it_refused() -> None:
    import base64

    from chainform.clients.registry import get_client

    url = "http://carol:pw-basic-7@127.0.0.1:9/v1"
    get_client("openai/gpt-4.1-mini", base_url=url)
    header = base64.b64encode(b"carol:pw-basic-7").decode()
    text = f"request failed: headers={{'authorization': 'Basic {header}'}}"
    assert header not in keys.redact(text)
    assert keys.MASK in keys.redact(text)
    with pytest.raises(ValueError, match="either a key or user:password"):
        get_client("openai/gpt-4.1-mini", base_url=url, key="sk-beside-the-url")


HEADER_KEY = "hdr-key-4b1e9c77aa"


@pytest.mark.parametrize(
    ("settings", "secret"),
    [
        ({"default_headers": {"api-key": HEADER_KEY}}, HEADER_KEY),
        ({"default_headers": {"X-Goog-Api-Key": HEADER_KEY + "g"}}, HEADER_KEY + "g"),
        ({"default_headers": {"Authorization": f"Bearer {HEADER_KEY}b"}}, HEADER_KEY + "b"),
    ],
)
def test_a_key_given_as_a_header_is_masked_in_provider_errors(
    home: Path, settings: dict, secret: str
) -> None:
    from chainform.testing.emulator import Emulator, Fault

    with Emulator([Fault(401, message=f"bad credential {secret} for this resource")]) as emu:
        model = cf.get_model("openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="sk-x", **settings)
        with pytest.raises(cf.ProviderError) as info:
            model.prompt("hi").text()
    assert secret not in str(info.value) and keys.MASK in str(info.value)
    assert secret not in _log_text(home)


def test_a_gemini_header_key_is_masked() -> None:
    from chainform.clients.registry import get_client

    get_client("gemini/gemini-2.5-flash", key="g-key-x", headers={"X-Goog-Api-Key": "goog-hdr-77c1d2"})
    assert keys.redact("403: key goog-hdr-77c1d2 is invalid") == f"403: key {keys.MASK} is invalid"


def test_a_base_url_with_a_query_is_refused_and_its_key_masked() -> None:
    from chainform.clients.registry import get_client

    with pytest.raises(ValueError, match="must not carry a query") as info:
        get_client("openai/gpt-4.1-mini", base_url="http://127.0.0.1:9/v1/?api-key=q-key-1d9e4f2a")
    assert "q-key-1d9e4f2a" not in str(info.value)
    assert "q-key-1d9e4f2a" not in keys.redact("GET /v1/?api-key=q-key-1d9e4f2a")


def test_query_credentials_are_masked_in_any_url() -> None:
    text = "could not send traces to https://otel.example/v1/traces?token=tok-9a8b7c&x=1"
    assert (
        keys.redact(text) == f"could not send traces to https://otel.example/v1/traces?token={keys.MASK}&x=1"
    )
    assert keys.redact("?page=2&size=10") == "?page=2&size=10"
