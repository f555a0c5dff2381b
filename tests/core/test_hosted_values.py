"""Hosted tools' settings are checked where they are made: a lone string is one domain or store
id, never its characters (the adapters send list(value)), and a count is a whole number >= 1."""

from __future__ import annotations

import pytest

import chainform as cf

pytestmark = pytest.mark.unit


def test_one_domain_or_store_given_as_a_string_stays_one() -> None:
    # was: WebSearch(allowed_domains="example.com") sent ['e', 'x', 'a', ...] as the allowed domains
    assert cf.WebSearch(allowed_domains="example.com").allowed_domains == ("example.com",)
    assert cf.WebSearch(allowed_domains=["a.org", "b.org"]).allowed_domains == ("a.org", "b.org")
    assert cf.FileSearch("vs_1").store_ids == ("vs_1",)


@pytest.mark.parametrize(
    "make",
    [
        lambda: cf.WebSearch(max_uses=0),
        lambda: cf.WebSearch(max_uses=-3),
        lambda: cf.WebSearch(max_uses=True),  # type: ignore[arg-type]
        lambda: cf.WebSearch(max_uses=2.5),  # type: ignore[arg-type]
        lambda: cf.WebSearch(allowed_domains=[""]),
        lambda: cf.WebSearch(allowed_domains=[None]),  # type: ignore[list-item]
        lambda: cf.URLContext(max_uses=0),
        lambda: cf.FileSearch("vs_1", max_results=-1),
        lambda: cf.FileSearch(["vs_1", " "]),
    ],
)
def test_bad_settings_are_a_value_error_at_once(make) -> None:
    with pytest.raises(ValueError, match="must be"):
        make()
