"""A search's input is bounded and checked: what SQLite cannot take is a StoreError (exit 2 in
`logs -q`) naming the search, never a 'log database error' that reads like a damaged log."""

from __future__ import annotations

import pytest
from store_helpers import make_record

from chainform.store import Store, StoreError
from chainform.store._rows import MAX_SEARCH_TERMS

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def test_the_most_terms_a_search_takes_are_answered(store: Store) -> None:
    store.write_calls([make_record(prompt="kestrels hover %_ over fields", seq=0)])
    # terms of each kind: indexed (kestrels), scanned with LIKE (%_), negated (-herons)
    terms = ["kestrels", "%_", "-herons"] * (MAX_SEARCH_TERMS // 3)
    assert [r.seq for r in store.recent(None, query=" ".join(terms))] == [0]


@pytest.mark.parametrize(
    ("query", "why"),
    [
        (
            " ".join(f"w{i}" for i in range(MAX_SEARCH_TERMS + 1)),
            "terms; give at most",
        ),  # was: Expression tree is too large
        ("kestrels a\x00b", "NUL"),  # was: FTS5's 'unterminated string'
        ("kestrels \ud800", "not UTF-8"),  # was: a UnicodeEncodeError, exit 1
    ],
    ids=["too-many", "nul", "surrogate"],
)
def test_a_search_sqlite_cannot_take_is_refused_as_such(store: Store, query: str, why: str) -> None:
    store.write_calls([make_record(prompt="kestrels", seq=0)])
    with pytest.raises(StoreError, match=why):
        store.recent(None, query=query)


def test_logs_q_with_a_lone_surrogate_is_a_usage_error(home) -> None:
    from click.testing import CliRunner

    from chainform.cli import cli

    result = CliRunner().invoke(cli, ["logs", "-q", "x\udcff"])
    assert result.exit_code == 2 and result.output.count("Error:") == 1 and "not UTF-8" in result.output
