"""Recorded real provider traffic replayed through chainform's adapters (issue 30).

Each recorded answer (OpenAI chat and responses, Anthropic, Gemini, Bedrock, Groq, Mistral and
compatible servers, a tool-choice matrix across them) is served by the emulator byte for byte with
its status, streamed or whole as it came, to the adapter of its wire format; chainform's reading
(text, tool calls with ids, names and arguments, reasoning, refusal, usage with cached and
reasoning tokens, finish reason) must equal what `recorded_expect` reads from the same body, and
an error answer must become a `ProviderError` of the kind its status means.

Every file passes, or is skipped here with its reason: an API chainform has no adapter for, or
exchanges no chain makes (token counting, files, stored responses). The data lives outside the
repository (`../shared/data/recorded-traffic`); without it the test is skipped.
"""

from __future__ import annotations

import pytest
from recorded_replay import replay
from recorded_traffic import ROOT, chat_calls, exchanges, files

from chainform.testing.emulator import Emulator

pytestmark = pytest.mark.usefixtures("openai_isolated")

FILES = files()

# Answers that are not an answer of the API they claim to be (a test server's on purpose): the
# replay holds chainform to a typed error instead of a parse.
NOT_AN_ANSWER = {
    "test_openai/test_invalid_response.yaml": "a 200 JSON body without choices",
    "test_openai/test_text_response.yaml": "a 200 text/plain body",
}


@pytest.mark.parametrize("file", FILES or ["(absent)"])
async def test_recorded_answers_parse_as_their_bodies_say(file: str, emulator: Emulator) -> None:
    calls = chat_calls(file)
    if not calls:
        pytest.skip("; ".join(sorted({str(ex.not_chat) for ex in exchanges(file)})))
    malformed = file in NOT_AN_ANSWER
    problems = [problem for ex in calls for problem in await replay(ex, emulator, malformed=malformed)]
    assert not problems, "\n".join(problems)
    assert not emulator.errors


def test_every_listed_file_is_recorded() -> None:
    """The list of answers that are no answer names only files that exist (and then replays them)."""
    if not FILES:
        pytest.skip(f"no recorded traffic at {ROOT}")
    assert set(NOT_AN_ANSWER) <= set(FILES)
