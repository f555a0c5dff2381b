"""Many calls on one loaded model (what `map -m local --concurrency N` does), on both backends: each call
gets the answer it would get alone, whatever ran before or beside it; a cancelled call leaves the
others exact; the prefix reused from the previous call gives the tokens of a cold run."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import jsonschema

from chainform.local import LocalChatClient, _engine
from chainform.types import ChatOptions, Message, ResponseFormat

TEMPLATE = "Extract the invoice number and total from this invoice.\n\n"
DOCS = [
    "INVOICE INV-20417\nTotal due EUR 118.40\nPayment within 30 days.",
    "ACME TOOLS LTD\nINVOICE INV-99310\nTotal due USD 7,042.00",
    "Kestrel & Sons, invoice INV-55102, amount 12.5 GBP",
]
INVOICE = {
    "type": "object",
    "properties": {"invoice_number": {"type": "string"}, "total": {"type": "number"}},
    "required": ["invoice_number", "total"],
}
DOG = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def _options(schema: dict[str, Any] | None) -> ChatOptions:
    fmt = ResponseFormat.json_schema(schema) if schema is not None else None
    return ChatOptions(response_format=fmt, max_output_tokens=40)


CALLS = [(DOCS[0], INVOICE), (DOCS[1], DOG), (DOCS[2], None)]
"""Mixed schemas, and one call without any."""


async def _solo(client: LocalChatClient, doc: str, schema: dict[str, Any] | None) -> str:
    """The answer to one call on a model that kept nothing from earlier calls."""
    client.load().forget()
    response = await client.get_response([Message.user(TEMPLATE + doc)], _options(schema))
    return response.text


def _check(text: str, schema: dict[str, Any] | None) -> None:
    if schema is not None:
        jsonschema.validate(json.loads(text), schema)


async def test_concurrent_calls_each_get_their_solo_answer(tiny_client: LocalChatClient) -> None:
    solo = [await _solo(tiny_client, doc, schema) for doc, schema in CALLS]
    responses = await asyncio.gather(
        *(tiny_client.get_response([Message.user(TEMPLATE + doc)], _options(schema)) for doc, schema in CALLS)
    )
    assert [r.text for r in responses] == solo
    for (_, schema), response in zip(CALLS, responses, strict=True):
        _check(response.text, schema)


async def test_cancelling_one_call_leaves_the_others_exact(tiny_client: LocalChatClient) -> None:
    solo = [await _solo(tiny_client, doc, schema) for doc, schema in CALLS]
    tiny_client.load().forget()
    started = asyncio.Event()

    async def cancelled_midway() -> None:
        stream = tiny_client.get_streaming_response([Message.user(TEMPLATE + "Invent a dog.")], _options(DOG))
        async for _ in stream:  # leave after the first piece: the generation is cut mid-way
            started.set()
            break
        await stream.aclose()

    async def after_start(doc: str, schema: dict[str, Any] | None) -> str:
        await started.wait()
        return (await tiny_client.get_response([Message.user(TEMPLATE + doc)], _options(schema))).text

    results = await asyncio.gather(cancelled_midway(), *(after_start(doc, schema) for doc, schema in CALLS))
    assert list(results[1:]) == solo


def test_prefix_reuse_gives_the_tokens_of_a_cold_run(tiny_loaded: Any, feed_sizes: list[int]) -> None:
    """Row after row of a map share the template's fixed part: the second row prefills only its own
    part, and decodes exactly what it decodes on a fresh context."""
    encode = tiny_loaded.tokenizer.encode
    first, second = (encode(f"<|im_start|>user\n{TEMPLATE}{doc}<|im_end|>\n") for doc in DOCS[:2])
    shared = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    assert shared > 5

    def run(prompt: list[int]) -> _engine.Result:
        return _engine.generate(tiny_loaded, prompt, max_new_tokens=24, sampling=_engine.Sampling())

    run(first)
    before = len(feed_sizes)
    warm = run(second)
    assert feed_sizes[before] == len(second) - shared, "only the row's own part is prefilled"
    tiny_loaded.forget()
    before = len(feed_sizes)
    cold = run(second)
    assert feed_sizes[before] == len(second), "the cold run prefills the whole prompt"
    assert (warm.text, warm.output_tokens, warm.finish_reason) == (
        cold.text,
        cold.output_tokens,
        cold.finish_reason,
    )
