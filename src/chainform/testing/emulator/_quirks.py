"""Server quirks: how a real OpenAI-compatible server departs from the reference, played back.

`Emulator(script, quirks=LLAMA_CPP_PYTHON)` answers like llama-cpp-python's server: requests it
refuses get its error without using a script item, and replies are bent the way it bends them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chainform.testing.emulator._script import Fault, Part, Reply
from chainform.testing.emulator._wire import RecordedRequest
from chainform.types import FunctionCallContent


@dataclass(frozen=True)
class Quirks:
    """`refuse(request)`: the error for a request the server cannot serve (else None);
    `bend(reply, request)`: the reply as the server really sends it."""

    name: str
    refuse: Callable[[RecordedRequest], Fault | None]
    bend: Callable[[Reply, RecordedRequest], Reply]
    streams_always: bool = False
    """Answer every request with a stream, whatever its "stream" says (some proxies and mocks)."""


def _llama_cpp_python_refuse(request: RecordedRequest) -> Fault | None:
    body = request.json
    kind = (body.get("response_format") or {}).get("type", "text")
    if kind not in ("text", "json_object"):  # its pydantic request model knows only these two
        return Fault(
            500,
            message=f"[{{'type': 'literal_error', 'loc': ('body', 'response_format', "
            f"'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': '{kind}'}}]",
        )
    choice = body.get("tool_choice")
    if body.get("tools") and choice == "required":
        return Fault(500, message="Invalid tool_choice: 'required'")
    if body.get("tools") and choice == "auto" and body.get("stream"):
        return Fault(500, message="Automatic tool choice is not supported when streaming")
    return None


def _llama_cpp_python_bend(reply: Reply, request: RecordedRequest) -> Reply:
    if request.json.get("tools") and "tool_choice" not in request.json:  # tools ignored: text only
        text: list[Part] = [p for p in reply.parts if not isinstance(p, FunctionCallContent)]
        return Reply(text or ["I would look that up."], reply.usage, None, reply.chunk_size)
    return reply


LLAMA_CPP_PYTHON = Quirks("llama-cpp-python", _llama_cpp_python_refuse, _llama_cpp_python_bend)


STREAMS_ALWAYS = Quirks("streams always", lambda request: None, lambda reply, request: reply, streams_always=True)
