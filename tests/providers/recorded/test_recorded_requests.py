"""The requests chainform builds, held to the requests the real APIs accepted (issue 30).

Each recorded request that `recorded_requests.conversation` can read (text, tool calls and results,
function tools, the tool choice) is sent again by chainform's adapter for its wire format, where it
was recorded (the recorded answer replayed so that the call completes); the body chainform sent
and the recorded one must agree on roles in order, the content of a tool-call turn, the fields of
a tool result, the tool choice and each tool's shape.

Where the APIs document two spellings as one meaning the comparison reads them as one (see
`_same`); where chainform spells a thing differently on purpose, `DELIBERATE` says why. Requests
holding anything else (images, replayed reasoning, provider-side tools) are skipped with what they
hold.
"""

from __future__ import annotations

from typing import Any

import pytest
from recorded_replay import sent
from recorded_requests import Untranslated, conversation, shape
from recorded_traffic import Exchange, chat_calls, files

from chainform.testing.emulator import Emulator

pytestmark = pytest.mark.usefixtures("openai_isolated")

FILES = files()

# (wire, field) -> why chainform's spelling differs from the recorded one, both accepted by the API.
DELIBERATE = {
    ("chat", "roles"): "chainform sends the system prompt as `system`; the recording used `developer` "
    "(o1-mini refused both: the recorded answer is a 400)",
    ("responses", "roles"): "chainform sends the system prompt as an input message of role `system`; "
    "the recordings used the `instructions` field (both documented)",
}
# Recorded requests chainform does not send as recorded, and why (each must still differ).
NOT_SENT_AS_RECORDED = {
    "test_google/test_google_model_empty_user_prompt.yaml": "an empty prompt: chainform sends no empty "
    "text part, and google-genai refuses a request without contents (ProviderError, bad_request)",
}
# A tool-call turn's content at compatible servers: chainform sends "" (llama-cpp-python refuses
# null and a missing content with HTTP 500); the recordings left it out (Groq, Gemini's endpoint).
COMPAT_TOOL_TURN = "str (empty)"


def _same(wire: str, name: str, recorded: Any, ours: Any, at_openai: bool) -> bool:
    """Whether two spellings of one field mean the same to the real API."""
    if recorded == ours:
        return True
    if name == "blocks" and wire in ("anthropic", "gemini", "bedrock"):
        return _flat(recorded) == _flat(ours)  # turns joined as the roles are (below)
    if name == "tool_choice":
        return recorded is None  # none sent: the API's default, auto, which chainform spells out
    if name == "roles" and wire in ("anthropic", "gemini", "bedrock"):
        # these APIs join consecutive turns of one speaker; chainform joins them itself, and
        # leaves out a turn with nothing in it
        return _runs(recorded) == _runs(ours)
    if name == "tool_turn_content":
        # OpenAI documents content as optional on a tool-call turn: null and none are one
        normal = [("null" if c == "absent" else c) for c in recorded]
        compat = not at_openai and len(normal) == len(ours)
        return normal == ours or (
            compat and all(o in (n, COMPAT_TOOL_TURN) for n, o in zip(normal, ours, strict=True))
        )
    return False


def _flat(blocks: list[list[Any]]) -> list[Any]:
    return [b for turn in blocks for b in turn]


def _runs(roles: list[str]) -> list[str]:
    return [r for i, r in enumerate(roles) if r and (i == 0 or roles[i - 1] != r)]


async def _differences(ex: Exchange, emu: Emulator) -> list[str]:
    assert ex.wire is not None
    try:
        talk = conversation(ex.wire, ex.request)
    except Untranslated as why:
        return [f"skip: {why}"]
    ours = await sent(ex, emu, talk.messages, talk.options)
    recorded, built = shape(ex.wire, ex.request), shape(ex.wire, ours)
    at_openai = "//api.openai.com/" in ex.uri
    out = []
    for name, value in recorded.items():
        if _same(ex.wire, name, value, built[name], at_openai) or (ex.wire, name) in DELIBERATE:
            continue
        out.append(f"#{ex.index} {name}: recorded {value!r}, chainform {built[name]!r}")
    return out


@pytest.mark.parametrize("file", FILES or ["(absent)"])
async def test_requests_match_what_the_real_api_accepted(file: str, emulator: Emulator) -> None:
    calls = chat_calls(file)
    found = []
    for ex in calls:
        try:
            found.append(await _differences(ex, emulator))
        except AssertionError as exc:  # nothing was sent
            found.append([str(exc)])
    if file in NOT_SENT_AS_RECORDED:
        assert any(p for d in found for p in d if not p.startswith("skip: ")), "now sent as recorded"
        pytest.skip(NOT_SENT_AS_RECORDED[file])
    skipped = [d[0] for d in found if d and d[0].startswith("skip: ")]
    problems = [p for d in found for p in d if not p.startswith("skip: ")]
    assert not problems, "\n".join(problems)
    if len(skipped) == len(calls):
        pytest.skip("; ".join(sorted(set(skipped))) or "no model call")


def test_deliberate_differences_are_still_there() -> None:
    """Each deliberate difference names a field the comparison reads."""
    fields = set(shape("chat", {})) | set(shape("responses", {}))
    assert {name for _, name in DELIBERATE} <= fields
