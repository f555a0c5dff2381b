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

import ssl
from collections.abc import Iterator

import pytest
from recorded_replay import replay
from recorded_traffic import ROOT, exchanges, files

from chainform.testing.emulator import Emulator

pytestmark = pytest.mark.usefixtures("openai_isolated")

FILES = files()
_SSL_CONTEXT = ssl.create_default_context()


@pytest.fixture(autouse=True)
def one_ssl_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each SDK client builds an SSL context, loading the CA bundle (0.1 s); the replay's 600
    clients speak plain HTTP to the emulator, so they share one."""
    monkeypatch.setattr(ssl, "create_default_context", lambda *args, **kwargs: _SSL_CONTEXT)


# Answers that are not an answer of the API they claim to be (a test server's on purpose): the
# replay holds chainform to a typed error instead of a parse.
NOT_AN_ANSWER = {
    "test_openai/test_invalid_response.yaml": "a 200 JSON body without choices",
    "test_openai/test_text_response.yaml": "a 200 text/plain body",
}


@pytest.fixture(scope="module")
def replayer() -> Iterator[Emulator]:
    """One emulator for the module's 450 tests (stopping one costs 50 ms); each test's answers
    are its own script items, and what went wrong on the server side is cleared per test."""
    with Emulator() as server:
        yield server


@pytest.fixture
def emulator(replayer: Emulator) -> Iterator[Emulator]:
    replayer.errors.clear()
    yield replayer
    assert replayer.remaining == 0, "a recorded answer was not asked for"


@pytest.mark.parametrize("file", FILES or ["(absent)"])
async def test_recorded_answers_parse_as_their_bodies_say(file: str, emulator: Emulator) -> None:
    if not FILES:
        pytest.skip(f"no recorded traffic at {ROOT}")
    recorded = exchanges(file)
    if isinstance(recorded, str):
        pytest.skip(recorded)
    calls = [ex for ex in recorded if ex.not_chat is None]
    if not calls:
        pytest.skip("; ".join(sorted({str(ex.not_chat) for ex in recorded})))
    malformed = file in NOT_AN_ANSWER
    problems = [problem for ex in calls for problem in await replay(ex, emulator, malformed=malformed)]
    assert not problems, "\n".join(problems)
    assert not emulator.errors


def test_every_listed_file_is_recorded() -> None:
    """The list of answers that are no answer names only files that exist (and then replays them)."""
    if not FILES:
        pytest.skip(f"no recorded traffic at {ROOT}")
    assert set(NOT_AN_ANSWER) <= set(FILES)
