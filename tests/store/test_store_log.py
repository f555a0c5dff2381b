"""Writing and reading the log: every column, tool calls/results, schemas, search, history."""

from __future__ import annotations

import hashlib
import time

import pytest
from store_helpers import make_record

from chainform.chain._history import of_conversation
from chainform.store import (
    Store,
    StoreError,
    ToolCallRecord,
    ToolResultRecord,
    new_id,
)
from chainform.store._serialize import REDACTED, canonical_json
from chainform.types import FunctionCallContent, FunctionResultContent, Message, UsageDetails

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def test_store_round_trip_every_column(store: Store) -> None:
    record = make_record(
        schema=SCHEMA,
        strategy="deferred",
        purpose="format",
        parsed={"city": "Paris"},
        usage=UsageDetails(3, 4, additional_counts={"reasoning_tokens": 2}),
        error=None,
        tool_calls=[ToolCallRecord("c1", "lookup", {"q": "France"})],
        tool_results=[ToolResultRecord("c1", "lookup", "Paris", None)],
        format_context="[final answer]\nParis",
        format_context_policy="compact",
    )
    store.write_calls([record])
    [got] = store.recent(1)
    assert got.id == record.id
    assert (got.conversation_id, got.chain_id, got.seq, got.purpose) == ("conv1", "chain1", 0, "format")
    assert (got.strategy, got.model, got.prompt, got.system) == (
        "deferred",
        "scripted",
        record.prompt,
        "Be brief.",
    )
    assert [m.text for m in got.messages] == ["Be brief.", "What is the capital of France?"]
    assert got.options == {"temperature": 0.2}
    assert got.schema == SCHEMA and got.schema_id == store.save_schema(SCHEMA)
    assert got.text == "Paris" and got.parsed == {"city": "Paris"}
    assert got.usage == UsageDetails(3, 4, 7, {"reasoning_tokens": 2})
    assert got.duration_ms == 12.5 and got.created_at == pytest.approx(record.created_at)
    assert got.tool_calls == [ToolCallRecord("c1", "lookup", {"q": "France"})]
    assert got.tool_results == [ToolResultRecord("c1", "lookup", "Paris", None)]
    assert got.format_context == "[final answer]\nParis" and got.format_context_policy == "compact"
    as_dict = got.to_dict()
    assert as_dict["usage"]["total_tokens"] == 7 and as_dict["tool_calls"][0]["name"] == "lookup"


def test_store_failed_call_is_logged(store: Store) -> None:
    store.write_calls([make_record(text="", usage=None, error="ProviderError: HTTP 500")])
    [got] = store.recent()
    assert got.error == "ProviderError: HTTP 500" and got.usage is None and got.text == ""


def test_store_recent_orders_newest_first_and_filters(store: Store) -> None:
    now = time.time()
    for i in range(5):
        store.write_calls([make_record(conversation_id=f"conv{i % 2}", seq=i, created_at=now + i)])
    assert [r.seq for r in store.recent(3)] == [4, 3, 2]
    assert [r.seq for r in store.recent(None, conversation_id="conv1")] == [3, 1]
    assert store.last_conversation_id() == "conv0"
    assert len(store.recent(None)) == 5


def test_store_ids_sort_by_creation() -> None:
    ids = [new_id() for _ in range(1000)]
    assert ids == sorted(ids) and len(set(ids)) == 1000 and all(len(i) == 26 for i in ids)


def test_store_schema_is_content_addressed(store: Store) -> None:
    a = store.save_schema({"b": 1, "a": [1, 2]})
    b = store.save_schema({"a": [1, 2], "b": 1})
    assert a == b and len(a) == 64
    assert store.get_schema(a[:6]) == {"a": [1, 2], "b": 1}
    assert store.get_schema("zzzz") is None and store.get_schema("ab") is None
    store.write_calls([make_record(schema={"a": [1, 2], "b": 1})])
    [info] = store.list_schemas()
    assert info.id == a and info.uses == 1


def test_store_ambiguous_schema_prefix(store: Store) -> None:
    seen: dict[str, dict[str, int]] = {}
    for i in range(100_000):
        schema = {"n": i}
        prefix = hashlib.sha256(canonical_json(schema).encode()).hexdigest()[:4]
        if prefix in seen:
            store.save_schema(seen[prefix])
            store.save_schema(schema)
            break
        seen[prefix] = schema
    with pytest.raises(StoreError, match="ambiguous"):
        store.get_schema(prefix)


def test_store_filter_by_schema(store: Store) -> None:
    sid = store.save_schema(SCHEMA)
    store.write_calls([make_record(schema=SCHEMA, seq=1)])
    store.write_calls([make_record(schema=None, seq=2)])
    assert [r.seq for r in store.recent(None, schema_id=sid[:8])] == [1]


def test_store_full_text_search(store: Store) -> None:
    store.write_calls([make_record(prompt="Tell me about pelicans", text="Pelicans are large birds", seq=1)])
    store.write_calls([make_record(prompt="Weather in Rome", text="Sunny, 24 degrees", seq=2)])
    assert [r.seq for r in store.recent(None, query="pelicans")] == [1]
    assert [r.seq for r in store.recent(None, query="sunny rome")] == [2]
    assert store.recent(None, query='"unbalanced AND OR') == []
    assert store._fts


def test_store_like_fallback_search(store: Store) -> None:
    store.write_calls([make_record(prompt="100% cotton", text="a_b", seq=1)])
    store.write_calls([make_record(prompt="cotton 100", text="ab", seq=2)])
    store.recent(1)
    store._fts = None  # what a SQLite build without FTS5 gets
    assert [r.seq for r in store.recent(None, query="100%")] == [1]
    assert [r.seq for r in store.recent(None, query="a_b")] == [1]
    assert [r.seq for r in store.recent(None, query="COTTON")] == [2, 1]


def test_store_redacts_secrets(store: Store) -> None:
    message = Message("user", "hi", additional_properties={"api_key": "sk-1", "trace": {"x-api-key": "k"}})
    store.write_calls(
        [
            make_record(
                messages=[message],
                options={
                    "max_output_tokens": 5,
                    "additional_properties": {"Authorization": "Bearer x", "top_k": 3},
                },
            )
        ]
    )
    raw = store.path.read_bytes()
    [got] = store.recent()
    assert got.messages[0].additional_properties == {"api_key": REDACTED, "trace": {"x-api-key": REDACTED}}
    assert got.options == {
        "max_output_tokens": 5,
        "additional_properties": {"Authorization": REDACTED, "top_k": 3},
    }
    wal = store.path.with_name(store.path.name + "-wal")
    blob = raw + (wal.read_bytes() if wal.exists() else b"")
    assert b"sk-1" not in blob and b"Bearer x" not in blob


def test_conversation_rebuilt_from_the_log(store: Store) -> None:
    now = time.time()
    store.write_calls([make_record(chain_id="a", prompt="Hi", text="Hello!", created_at=now)])
    call = FunctionCallContent("c1", "lookup", {})
    store.write_calls(
        [
            make_record(
                chain_id="b",
                seq=0,
                prompt="Look it up",
                text="",
                created_at=now + 1,
                messages=[Message.user("Look it up"), Message.assistant(call)],
            )
        ]
    )
    store.write_calls(
        [
            make_record(
                chain_id="b",
                seq=1,
                prompt="Look it up",
                text="Found it",
                created_at=now + 2,
                messages=[Message("tool", FunctionResultContent("c1", "x"))],
            )
        ]
    )
    store.write_calls(
        [
            make_record(
                chain_id="b",
                seq=2,
                purpose="format",
                prompt=None,
                text='{"v":1}',
                parsed={"v": 1},
                created_at=now + 3,
            )
        ]
    )
    store.write_calls([make_record(chain_id="c", prompt="Broken", text="", error="boom", created_at=now + 4)])
    store.write_calls([make_record(conversation_id="other", chain_id="d", created_at=now + 5)])
    history = of_conversation(store, "conv1")
    assert [(m.role, m.text) for m in history] == [
        ("user", "Hi"),
        ("assistant", "Hello!"),
        ("user", "Look it up"),
        ("assistant", '{"v": 1}'),
    ]


def test_a_conversations_first_name_is_kept(store: Store) -> None:
    store.write_calls([make_record(conversation_id="c9")])
    store.write_calls([make_record(conversation_id="c9", conversation_name="first question")])
    store.write_calls([make_record(conversation_id="c9", conversation_name="ignored")])
    assert store.recent(1)[0].conversation_name == "first question"


def test_store_default_path_honours_home(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CHAINFORM_HOME", str(tmp_path / "home"))
    s = Store()
    assert s.path == tmp_path / "home" / "logs.db"
    s.write_calls([make_record()])
    assert s.path.exists()
    s.close()


def test_store_unopenable_path(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot open"):
        Store(blocker / "logs.db").recent()


@pytest.mark.parametrize("extra", ["", " — naïve ☃"])  # ASCII rows take the one-test path
def test_store_masks_loaded_keys_in_every_written_column(store: Store, extra: str, monkeypatch) -> None:
    from chainform import keys

    monkeypatch.setattr(keys, "_loaded", set(keys._loaded))  # forgotten after the test
    monkeypatch.setattr(keys, "_longest_first", keys._longest_first)
    secret = "sk-cf-store-planted-7d1e"
    keys.remember(secret)
    store.write_calls(
        [
            make_record(
                prompt=f"use {secret}{extra}",
                messages=[Message.user(f"key {secret}")],
                text=f"echo {secret}",
                tool_calls=[ToolCallRecord("c1", "t", {"k": secret})],
                tool_results=[ToolResultRecord("c1", "t", f"out {secret}", f"err {secret}")],
                format_context=f"ctx {secret}",
                error=f"boom http://user:{secret}@host",
            )
        ]
    )
    [got] = store.recent()
    assert got.prompt == f"use {keys.MASK}{extra}"
    raw = store.path.read_bytes()
    wal = store.path.with_name(store.path.name + "-wal")
    blob = raw + (wal.read_bytes() if wal.exists() else b"")
    assert secret.encode() not in blob and keys.MASK.encode() in blob


def test_a_file_the_log_holds_is_not_handed_to_sqlite_again(store: Store) -> None:
    """Each call of a chain carries its files' rows: the bytes go to SQLite with the first only."""
    from chainform.store._attachments import Attached

    data = b"%PDF-1.7 " + b"x" * 1000
    file = Attached(
        hashlib.sha256(data).hexdigest(), "application/pdf", len(data), "a.pdf", "as-is", "", data, None
    )
    store.write_calls([make_record(chain_id="a", seq=0)], [file])
    statements: list[str] = []
    store._connect().set_trace_callback(statements.append)
    second = make_record(chain_id="a", seq=1)
    store.write_calls([second], [file])
    store._connect().set_trace_callback(None)
    assert not [s for s in statements if s.startswith("INSERT OR IGNORE INTO attachments")]
    assert [a.sha256 for a in store.recent(1)[0].attachments] == [file.sha256]  # still linked
