"""Round trips over a fixed sample of JSONSchemaBench-dev (the bench runs all of it)."""

from __future__ import annotations

from typing import Any

import pytest
from _dialects_testdata import bench_sample

from chainform.errors import SchemaError
from chainform.schema.dialects import convert, forward_instance, provider_accepts, restore
from chainform.schema.validate import check_schema, is_valid

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

DIALECTS = ["openai-strict", "gemini", "anthropic", "bedrock", "llguidance"]


def within(part: Any, whole: Any) -> bool:
    """`part` is `whole` with some object keys (at any depth) removed."""
    if isinstance(part, dict) and isinstance(whole, dict):
        return all(k in whole and within(v, whole[k]) for k, v in part.items())
    if isinstance(part, list) and isinstance(whole, list):
        return len(part) == len(whole) and all(within(a, b) for a, b in zip(part, whole, strict=True))
    return bool(part == whole and type(part) is type(whole))


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    out = []
    for doc in bench_sample(120, seed=11):
        try:
            check_schema(doc["schema"])
        except SchemaError:
            continue
        out.append(doc)
    return out


@pytest.mark.parametrize("dialect", DIALECTS)
def test_round_trip_properties(dialect: str, docs: list[dict]) -> None:
    converted = survived = 0
    for doc in docs:
        schema = doc["schema"]
        try:
            conv = convert(schema, dialect)
        except SchemaError:
            continue
        converted += 1
        for test in doc["tests"]:
            emitted = forward_instance(test["data"], schema, dialect)
            back = restore(emitted, schema, dialect)
            if not test["valid"]:
                if dialect in ("bedrock", "llguidance"):  # no shape changes: nothing can turn valid
                    assert not is_valid(back, schema), (doc["name"], test["description"])
                continue
            if conv.lossless:
                assert provider_accepts(emitted, conv), (doc["name"], emitted)
                assert back == test["data"], (doc["name"], test["description"])
            if provider_accepts(emitted, conv):
                # Restoring never invents data: at most it loses what the dialect cannot carry (extra keys
                # of closed objects, explicit nulls on optional fields), which the final check then sees.
                assert within(back, test["data"]), (doc["name"], test["description"], back)
                survived += back == test["data"] and is_valid(back, schema)
    assert converted >= 0.9 * len(docs)
    assert survived > 0


def test_openai_strict_emitted_values_have_every_property(docs: list[dict]) -> None:
    for doc in docs:
        try:
            conv = convert(doc["schema"], "openai-strict")
        except SchemaError:
            continue
        for test in doc["tests"]:
            if not test["valid"]:
                continue
            emitted = forward_instance(test["data"], doc["schema"], "openai-strict")
            assert isinstance(emitted, dict)  # the root is always an object (wrapped if needed)
            if provider_accepts(emitted, conv):
                assert restore(emitted, doc["schema"], "openai-strict") is not None


@pytest.mark.parametrize("dialect", ["jsonschema", *DIALECTS])
def test_converting_leaves_the_schema_as_it_was(dialect: str, docs: list[dict]) -> None:
    """The adapters hand a chain's own schema object to `convert` (no copy); the conversion must not
    change it."""
    import contextlib
    import copy

    from chainform.schema.dialects import get_dialect

    for doc in docs:
        schema = doc["schema"]
        before = copy.deepcopy(schema)
        with contextlib.suppress(SchemaError):
            get_dialect(dialect).convert(schema)
        assert schema == before
