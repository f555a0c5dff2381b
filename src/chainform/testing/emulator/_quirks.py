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
    empty_stream: Callable[[RecordedRequest], bool] = lambda request: False
    """Requests answered 200 `text/event-stream` with no event at all (the server gave up after
    sending its headers)."""


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
    if (
        body.get("tools")
        and isinstance(choice, str)
        and choice not in ("auto", "none")
        and not body.get("stream")
    ):
        # chatml-function-calling asserts that a choice other than a named function is "auto":
        # an AssertionError, which the server answers with HTTP 500 and an empty message
        return Fault(500, message="")
    for i, message in enumerate(body.get("messages") or []):
        if message.get("role") == "assistant" and not isinstance(message.get("content"), str):
            # its request model types content as a string (null refused, and its template reads it)
            return Fault(
                500,
                message=f"[{{'type': 'string_type', 'loc': ('body', 'messages', {i}, 'content'), "
                "'msg': 'Input should be a valid string', 'input': None}]",
            )
    return None


def _llama_cpp_python_empty_stream(request: RecordedRequest) -> bool:
    # streaming with tools under any choice but a named function: headers, then it raises
    # "Automatic streaming tool choice is not supported" and the stream ends with no event
    body = request.json
    return bool(body.get("tools") and body.get("stream") and not isinstance(body.get("tool_choice"), dict))


def _llama_cpp_python_bend(reply: Reply, request: RecordedRequest) -> Reply:
    choice = request.json.get("tool_choice")
    if request.json.get("tools") and choice in (None, "none"):  # tools ignored: text only
        text: list[Part] = [p for p in reply.parts if not isinstance(p, FunctionCallContent)]
        return Reply(text or ["I would look that up."], reply.usage, None, reply.chunk_size)
    if (
        request.json.get("tools")
        and choice == "auto"
        and not any(isinstance(p, FunctionCallContent) for p in reply.parts)
    ):  # its "message:" branch samples under the function-name grammar: the text ends at once
        return Reply([""], reply.usage, None, reply.chunk_size)
    return reply


LLAMA_CPP_PYTHON = Quirks(
    "llama-cpp-python",
    _llama_cpp_python_refuse,
    _llama_cpp_python_bend,
    empty_stream=_llama_cpp_python_empty_stream,
)


STREAMS_ALWAYS = Quirks(
    "streams always", lambda request: None, lambda reply, request: reply, streams_always=True
)
