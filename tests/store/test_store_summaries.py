"""`call_summaries`: the few columns of many conversations' calls, read a batch of conversations at a
time, each conversation's calls in the order they ran."""

from __future__ import annotations

import pytest
from store_helpers import make_record

from chainform.evals._summaries import IDS_PER_QUERY, CallSummary, call_summaries
from chainform.store import Store

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def test_each_conversations_calls_come_back_in_seq_order(store: Store) -> None:
    store.write_calls(
        [make_record(conversation_id="a", seq=2, purpose="retry", strategy="native", duration_ms=5.0)]
    )
    store.write_calls(
        [make_record(conversation_id="a", seq=1, purpose="chain", strategy=None, duration_ms=None)]
    )
    store.write_calls([make_record(conversation_id="b", seq=1, purpose="format", strategy="tool")])
    store.write_calls([make_record(conversation_id="c", seq=1)])  # not asked for
    found = call_summaries(store, ["a", "b", "b", "missing"])
    assert sorted(found) == ["a", "b"]  # a conversation with no logged call is absent, one asked twice once
    assert [(c.seq, c.purpose, c.strategy, c.duration_ms) for c in found["a"]] == [
        (1, "chain", None, None),
        (2, "retry", "native", 5.0),
    ]
    (only,) = found["b"]
    assert only == CallSummary(only.id, "b", 1, "format", "tool", 12.5)
    assert {c.id for c in store.recent(None, conversation_id="a")} == {c.id for c in found["a"]}


def test_more_conversations_than_one_query_binds(store: Store) -> None:
    names = [f"conv{n:04d}" for n in range(IDS_PER_QUERY * 2 + 3)]
    store.write_calls([make_record(conversation_id=name, seq=1) for name in names])
    found = call_summaries(store, names)
    assert sorted(found) == names
    assert all(len(calls) == 1 and calls[0].conversation_id == name for name, calls in found.items())
    assert call_summaries(store, []) == {}
