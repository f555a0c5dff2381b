"""Constrained output from a random-weight model validates for many JSONSchemaBench schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from chainform.errors import SchemaError
from chainform.local import LocalChatClient
from chainform.local._grammar import tighten
from chainform.types import ChatOptions, FinishReason, Message, ResponseFormat

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "jsonschemabench-dev"
PER_SUBSET = {"Github_trivial": 15, "Github_easy": 20, "Glaiveai2K": 20, "Handwritten": 10, "Synthesized": 10}


def _sample(share: float) -> list[Path]:
    """`share` of each subset's PER_SUBSET schemas (at least one), spread over the subset."""
    picked: list[Path] = []
    for subset, count in PER_SUBSET.items():
        files = sorted((DATA / subset).glob("*.json"))
        step = max(1, len(files) // count)
        picked.extend(files[::step][: max(1, round(count * share))])
    return picked


def _validator(schema: dict[str, Any]) -> Any:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


@pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data/jsonschemabench-dev is not present")
@pytest.mark.parametrize(
    ("tiny_loaded", "share"),
    # the grammar masks whatever logits a backend gives: the whole sample on ONNX (what `local` prefers),
    # a fifth of it on torch as the cross-backend check
    [("onnx", 1.0), ("torch", 0.2)],
    indirect=["tiny_loaded"],
)
async def test_constrained_output_always_validates(tiny_client: LocalChatClient, share: float) -> None:
    counts = {"valid": 0, "length": 0, "rejected": 0}
    sample = _sample(share)
    for index, path in enumerate(sample):
        schema = json.loads(path.read_text())["schema"]
        options = ChatOptions(
            response_format=ResponseFormat.json_schema(schema),
            temperature=1.0,
            seed=index,
            max_output_tokens=256,
        )
        try:
            response = await tiny_client.get_response([Message.user("Fill in the data.")], options)
        except SchemaError:
            counts["rejected"] += 1  # llguidance cannot enforce it: the chain engine falls back
            continue
        if response.finish_reason == FinishReason.LENGTH:
            counts["length"] += 1  # cut by max_output_tokens: reported as such, never as a finished answer
            continue
        errors = [e.message for e in _validator(schema).iter_errors(json.loads(response.text))]
        assert not errors, f"{path.name}: {response.text[:300]!r} does not validate: {errors[:3]}"
        counts["valid"] += 1
    compiled = counts["valid"] + counts["length"]
    print(f"jsonschemabench sample: {counts}")
    assert compiled >= 0.6 * len(sample), counts
    assert counts["valid"] >= 0.95 * compiled, counts


def test_tighten_caps_strings_and_closes_listed_objects() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "code": {"type": "string", "minLength": 40},
            "tags": {"type": "array", "items": {"type": ["string", "null"]}},
            "kind": {"type": "string", "enum": ["a", "b"]},
        },
        "required": ["name"],
        "$defs": {"part": {"allOf": [{"properties": {"x": {"type": "string"}}}]}},
    }
    out = tighten(schema, 10)
    assert out["additionalProperties"] is False
    props = out["properties"]
    assert props["name"]["maxLength"] == 10
    assert props["code"]["maxLength"] == 40  # never below minLength
    assert props["tags"]["items"]["maxLength"] == 10
    assert "maxLength" not in props["kind"]
    inner = out["$defs"]["part"]["allOf"][0]
    assert "additionalProperties" not in inner  # a conjunct may not close the object for the others
    assert inner["properties"]["x"]["maxLength"] == 10
    assert "maxLength" not in schema["properties"]["name"]  # the caller's schema is untouched


async def test_unsupported_schema_is_a_schema_error(tiny_client: LocalChatClient) -> None:
    schema = {"type": "integer", "not": {"const": 3}}
    with pytest.raises(SchemaError, match="cannot enforce"):
        await tiny_client.get_response(
            [Message.user("x")], ChatOptions(response_format=ResponseFormat.json_schema(schema))
        )
