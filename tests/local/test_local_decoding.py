"""The decode loop's shortcuts on both backends: forced tokens fed in one pass, and the KV cache of the
last generation reused for the prefix the next prompt shares with it (a tool chain's next turn)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import numpy as np
import pytest

from chainform.local import _engine, _grammar
from chainform.types import ChatOptions, ResponseFormat


def test_forced_tokens_share_one_forward_pass(tiny_loaded: Any, feed_sizes: list[int]) -> None:
    schema = {
        "type": "object",
        "properties": {
            "a_rather_long_property_name": {"type": "boolean"},
            "another_long_key": {"type": "boolean"},
        },
        "required": ["a_rather_long_property_name", "another_long_key"],
        "additionalProperties": False,
    }
    grammar = _grammar.plan(ChatOptions(response_format=ResponseFormat.json_schema(schema))).grammar
    prompt = tiny_loaded.tokenizer.encode("hi", add_special_tokens=False)
    result = _engine.generate(
        tiny_loaded, prompt, max_new_tokens=80, sampling=_engine.Sampling(), grammar=grammar
    )
    jsonschema.validate(json.loads(result.text), schema)
    steps = feed_sizes[1:]  # after the prompt's prefill
    assert max(steps) > 1, "the keys are forced: several tokens per pass"
    assert len(steps) < result.output_tokens
    assert sum(steps) <= result.output_tokens  # the last token is never fed


def test_the_next_prompt_reuses_the_shared_prefix(tiny_loaded: Any, feed_sizes: list[int]) -> None:
    """Logits after a rewound, partly re-fed context equal those of a fresh prefill of the same prompt."""
    encode = tiny_loaded.tokenizer.encode
    first = encode(
        "<|im_start|>system\nYou call tools.<|im_end|>\n<|im_start|>user\nWeather?", add_special_tokens=False
    )
    second = first[:-2] + encode(" in Paris, please?<|im_end|>", add_special_tokens=False)
    _engine.generate(tiny_loaded, first, max_new_tokens=5, sampling=_engine.Sampling())
    context, reused = tiny_loaded.prefill(second, len(second) + 5)
    assert feed_sizes[-1] == len(second) - (len(first) - 2), "only the new tokens are fed"
    assert context.tokens == second
    tiny_loaded.forget()
    _, fresh = tiny_loaded.prefill(second, len(second) + 5)
    assert feed_sizes[-1] == len(second)
    np.testing.assert_allclose(reused, fresh, rtol=1e-3, atol=1e-3)


def test_a_failed_generation_drops_the_kept_context(tiny_loaded: Any) -> None:
    prompt = tiny_loaded.tokenizer.encode("hi", add_special_tokens=False)
    _engine.generate(tiny_loaded, prompt, max_new_tokens=3, sampling=_engine.Sampling())
    assert tiny_loaded._context is not None

    def fail(_: str) -> None:
        raise RuntimeError("the reader went away")

    with pytest.raises(RuntimeError, match="went away"):
        _engine.generate(
            tiny_loaded,
            prompt,
            max_new_tokens=3,
            sampling=_engine.Sampling(),
            grammar='start: "abc"',
            emit=fail,
        )
    assert tiny_loaded._context is None
