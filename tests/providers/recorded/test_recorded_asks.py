"""Recorded real answers of issue 46's cases, replayed through a whole chain: a real provider's
"stopped at the limit" is a TruncatedOutputError after one call, never a re-ask."""

from __future__ import annotations

import pytest
from recorded_replay import client_for
from recorded_traffic import chat_calls

import chainform as cf
from chainform.testing.emulator import Emulator, RawResponse

pytestmark = pytest.mark.usefixtures("openai_isolated")

CUT_OFF = [
    "test_google/test_google_model_max_tokens.yaml",  # finishReason MAX_TOKENS
    "test_bedrock/test_bedrock_model_max_tokens.yaml",  # stopReason max_tokens
]


@pytest.mark.parametrize("file", CUT_OFF)
def test_a_recorded_cut_answer_is_truncated_after_one_call(file: str, replayer: Emulator) -> None:
    (ex,) = chat_calls(file)
    assert ex.wire is not None
    replayer.add(RawResponse(ex.status, ex.body, ex.content_type, ex.reply_headers))
    before = len(replayer.requests)
    model = cf.Model(client_for(ex.wire, ex.model, replayer))
    chain = model.prompt("Capital of France?", schema="capital", strategy="prompted", stream=ex.streamed)
    with pytest.raises(cf.TruncatedOutputError) as info:
        chain.value
    assert len(replayer.requests) == before + 1
    assert info.value.text and info.value.usage.output_tokens
    assert [c.finish_reason for c in info.value.responses] == ["length"]
    model.close()
