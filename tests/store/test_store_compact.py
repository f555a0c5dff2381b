"""A sync chain's compact spool record (store/_compact.py) gives the log the same rows as the rows
path (`rows_of` over the engine's calls), and what only the rows path can hold goes that way."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import chainform as cf
from chainform import keys
from chainform.store import Store, _chainlog, _compact
from chainform.store._rows import Rows
from chainform.testing import ScriptedClient, tool_call
from chainform.types import DataContent, Message, TextContent


class Answer(BaseModel):
    city: str
    temp_c: float


def get_weather(city: str) -> dict[str, Any]:
    "Weather for a city."
    return {"city": city, "temp_c": 21.5, "note": "ciel dégagé ☀"}


def fails(city: str) -> str:
    "Always fails."
    raise RuntimeError(f"no station in {city}")


@pytest.fixture
def chains(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bytes | None, Rows]]:
    """Each logged chain: (its compact record, its rows made by `rows_of`); the record is what
    was written when there was one."""
    seen: list[tuple[bytes | None, Rows]] = []
    staged = _chainlog.ChainLogger._staged

    def spy(self: Any, noted: list[Any]) -> bool:
        record = _compact.encode(self, noted)
        seen.append((record, self._rows(noted)))
        return staged(self, noted)

    monkeypatch.setattr(_chainlog.ChainLogger, "_staged", spy)
    return seen


def _timeless(rows: Rows) -> Rows:
    return {k: [r[:-1] for r in v] if k in ("conversations", "schemas") else v for k, v in rows.items()}


def _spooled_formats(home: Path) -> list[bytes]:
    data = (home / "logs.db-spool").read_bytes()
    return [line.partition(b" ")[0] for line in data.split(b"\n") if line]


def test_a_record_gives_the_rows_of_the_calls(home: Path, chains: list[Any]) -> None:
    both = cf.ModelProfile(name="both", supports_json_schema=True, supports_tools_with_schema=True)
    model = cf.Model(ScriptedClient([tool_call("get_weather", city="Paris"), '{"city": "Paris"',
                                     '{"city": "Paris", "temp_c": 21.5}'], both))  # fmt: skip
    model.chain("Météo à Paris ?", system="Be brief.", tools=[get_weather], schema=Answer).value
    plain = cf.ModelProfile(name="plain", supports_json_schema=False, supports_tools_with_schema=False)
    deferred = cf.Model(ScriptedClient([tool_call("fails", city="Oslo"), "It failed.",
                                        tool_call("final_result", city="Oslo", temp_c=0)], plain))  # fmt: skip
    deferred.chain("Oslo?", tools=[fails], schema=Answer, strategy="deferred").value
    cf.Model(ScriptedClient(["hi"])).chain([TextContent("one"), TextContent("two")]).text()
    assert len(chains) == 3
    for record, rows in chains:
        assert record is not None
        assert _timeless(_compact.decode(record)) == _timeless(rows)
    formatted = _compact.decode(chains[1][0])
    assert [r[4] for r in formatted["responses"]] == ["chain", "chain", "format"]
    assert formatted["format_contexts"][0][1] == "compact" and "no station" in formatted["tool_results"][0][4]
    assert _spooled_formats(home) == [b"3"] * 3
    store = Store()
    assert len(store.recent(None)) == 7  # read back: the tables hold every call
    store.close()


def test_a_record_keeps_what_a_message_carries(home: Path, chains: list[Any]) -> None:
    named = [Message("user", "salut", author_name="ana\u00efs", message_id="m-1")]
    cf.Model(ScriptedClient(["bonjour"])).chain(history=named).text()
    [(record, rows)] = chains
    assert record is not None and _timeless(_compact.decode(record)) == _timeless(rows)
    assert '"author_name":"anaïs"' in rows["responses"][0][9]


def test_what_only_rows_hold_is_written_as_rows(home: Path, chains: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    picture = Message.user([TextContent("look"), DataContent(b"\x89PNG", "image/png")])
    cf.Model(ScriptedClient(["a picture"])).chain(history=[picture]).text()  # inline bytes: blobs
    extras = Message("user", "hi", additional_properties={"api_key": "x"})
    cf.Model(ScriptedClient(["hello"])).chain(history=[extras]).text()  # extras: redacted
    cf.Model(ScriptedClient(["half a pair: \ud83d"])).chain("lone?").text()  # not UTF-8
    monkeypatch.setattr(keys, "_loaded", set(keys._loaded))
    secret = "sk-cf-compact-planted-91ab"
    keys.remember(secret)
    cf.Model(ScriptedClient([f"echo {secret}"])).chain("key?").text()  # masked by the rows
    assert [record for record, _ in chains] == [None] * 4
    assert b"3" not in _spooled_formats(home)
    store = Store()
    texts = [r.text for r in store.recent(None)]
    assert f"echo {keys.MASK}" in texts and not any(secret in t for t in texts)
    with sqlite3.connect(store.path) as db:
        assert not any(secret in str(row) for row in db.execute("SELECT * FROM responses"))
    store.close()


class _Ambiguous:
    """An option value whose == cannot answer (as a numpy array's)."""

    def __eq__(self, other: object) -> bool:
        raise ValueError("the truth value is ambiguous")

    __hash__ = object.__hash__

    def __str__(self) -> str:
        return "ambiguous"


def test_options_that_cannot_be_compared_are_still_logged(home: Path) -> None:
    for text in ("one", "two"):  # an option chainform does not know is kept as an extra
        cf.Model(ScriptedClient([text])).chain("hi?", options={"probe": _Ambiguous()}).text()
    store = Store()
    records = store.recent(None)
    assert sorted(r.text for r in records) == ["one", "two"]
    assert all("'probe': 'ambiguous'" in str(r.options) for r in records)
    store.close()
