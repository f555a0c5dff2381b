"""LocalChatClient: a ChatClient that runs a small Hugging Face model on this machine's CPU.

Decoding runs in a worker thread; text pieces come back to the event loop over a queue, so a long
generation never blocks other coroutines. Structured output and tool calls are enforced by an
llguidance grammar (see `_grammar`), which is why the profile claims native schemas and tools together.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from chainform.clients.base import BaseChatClient, Middleware
from chainform.errors import ProviderError, UnsupportedOptionError
from chainform.local import _engine, _grammar, _weights
from chainform.types import (
    ChatOptions,
    ChatResponseUpdate,
    DataContent,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    ModelProfile,
    Role,
    TextContent,
    TextReasoningContent,
    UriContent,
    UsageContent,
    UsageDetails,
)

DEFAULT_MAX_OUTPUT_TOKENS = 512
CONTEXT_WINDOW = 8192


def local_profile(name: str) -> ModelProfile:
    return ModelProfile(
        name=name,
        provider="local",
        supports_tools=True,
        supports_parallel_tool_calls=True,
        supports_json_schema=True,
        supports_tools_with_schema=True,
        supports_tool_choice_required=True,
        supports_strict_schema=True,
        supports_seed=True,
        schema_dialect="llguidance",
        context_window=CONTEXT_WINDOW,
        max_output_tokens=CONTEXT_WINDOW,
    )


class LocalChatClient(BaseChatClient):
    """Runs `model` ("smollm2", a Hugging Face folder or a .gguf file) with transformers on the CPU.

    Loading is lazy (first call) and shared per folder within the process. Defaults: greedy decoding
    (temperature None or 0), at most `max_output_tokens` new tokens, strings capped at
    `max_string_length` characters where a schema sets no maxLength.
    """

    def __init__(
        self,
        model: str = "smollm2",
        *,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        max_string_length: int = _grammar.DEFAULT_MAX_STRING_LENGTH,
        threads: int | None = None,
        middleware: Sequence[Middleware] = (),
        loaded: _engine.Loaded | None = None,
    ) -> None:
        name = _weights.SMOLLM2_DIR if model.lower() in _weights.ALIASES else Path(model).name
        super().__init__(profile=local_profile(name), middleware=middleware)
        self.model = model
        self.model_id = f"local/{model}"
        self.max_output_tokens = max_output_tokens
        self.max_string_length = max_string_length
        self.threads = threads
        self._loaded = loaded

    @classmethod
    def from_objects(
        cls, model: Any, tokenizer: Any, *, name: str = "in-memory", **kwargs: Any
    ) -> LocalChatClient:
        """A client around an already built transformers model and tokenizer (no files needed)."""
        loaded = _engine.from_objects(Path(name), model, tokenizer)
        return cls(name, loaded=loaded, **kwargs)

    def load(self) -> _engine.Loaded:
        """Load the weights now (otherwise the first call does); blocking, safe to call twice."""
        if self._loaded is None:
            self._loaded = _engine.load(_weights.resolve(self.model), self.threads)
        return self._loaded

    def count_tokens(self, text: str) -> int:
        return len(self.load().tokenizer.encode(text, add_special_tokens=False))

    async def _stream(
        self, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate]:
        plan = _grammar.plan(options, self.max_string_length)
        loaded = await asyncio.to_thread(self.load)
        prompt_ids = _prompt_ids(loaded.tokenizer, _chat(messages, plan))
        room = _engine.check_context(len(prompt_ids), self.profile.context_window or CONTEXT_WINDOW)
        budget = min(options.max_output_tokens or self.max_output_tokens, room)
        sampling = _engine.Sampling(
            options.temperature,
            options.top_p,
            options.top_k,
            options.seed,
            options.presence_penalty,
            options.frequency_penalty,
        )
        base: dict[str, Any] = {
            "response_id": f"local-{uuid.uuid4().hex[:12]}",
            "message_id": f"msg-{uuid.uuid4().hex[:12]}",
            "model_id": self.model_id,
            "created_at": time.time(),
            "role": Role.ASSISTANT,
        }
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str] = asyncio.Queue()
        cancelled = threading.Event()

        def emit(piece: str) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, piece)

        def run() -> _engine.Result:
            return _engine.generate(
                loaded,
                prompt_ids,
                max_new_tokens=budget,
                sampling=sampling,
                grammar=plan.grammar,
                stop_sequences=options.stop_sequences,
                emit=emit,
                land_after=_grammar.CALL_OPEN if plan.mode == "text_or_calls" else "",
                cancelled=cancelled,
            )

        worker = asyncio.ensure_future(asyncio.to_thread(run))
        # Text is streamed at once unless it may turn out to be a tool call: then it is held until
        # the first visible character says which branch of the grammar the model took.
        held: list[str] | None = [] if plan.may_call else None
        try:
            while not (worker.done() and queue.empty()):
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, worker}, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                    continue
                piece = getter.result()
                if held is None:
                    yield ChatResponseUpdate([TextContent(piece)], **base)
                    continue
                held.append(piece)
                start = "".join(held).lstrip()
                if start and not _grammar.CALL_OPEN.startswith(start[: len(_grammar.CALL_OPEN)]):
                    yield ChatResponseUpdate([TextContent("".join(held))], **base)
                    held = None
            result = await worker
        finally:
            cancelled.set()
        contents: list[Any] = []
        finish = result.finish_reason
        if held is not None:
            calls = _grammar.parse_calls(result.text) if plan.may_call else None
            if calls:
                contents.extend(calls)
                finish = FinishReason.TOOL_CALLS
            elif held:
                contents.append(TextContent("".join(held)))
        usage = UsageDetails(input_tokens=len(prompt_ids), output_tokens=result.output_tokens)
        contents.append(UsageContent(usage))
        yield ChatResponseUpdate(contents, finish_reason=finish, **base)


def _chat(messages: Sequence[Message], plan: _grammar.Plan) -> list[dict[str, str]]:
    """Messages in the chat-template form; tool calls and results are written as the model's own text."""
    system = [m.text for m in messages if m.role == Role.SYSTEM and m.text]
    if plan.instructions:
        system.append(plan.instructions)
    out = [{"role": "system", "content": "\n\n".join(system)}] if system else []
    if plan.may_call:
        example = _grammar.example_turns(json_answer=plan.mode != "text_or_calls")
        out.extend({"role": role, "content": text} for role, text in example)
    names = {c.call_id: c.name for m in messages for c in m.function_calls}
    for message in messages:
        if message.role == Role.SYSTEM:
            continue
        for content in message.contents:
            if isinstance(content, DataContent | UriContent):
                raise UnsupportedOptionError("the local model reads text only", provider="local")
        text = "".join(c.text for c in message.contents if isinstance(c, TextContent | TextReasoningContent))
        calls = [c for c in message.contents if isinstance(c, FunctionCallContent)]
        results = [c for c in message.contents if isinstance(c, FunctionResultContent)]
        if calls:
            text = (text + "\n" if text else "") + _grammar.render_calls(calls)
        if results:
            text = "\n".join(_tool_response(r, names.get(r.call_id)) for r in results) + (
                "\n" + text if text else ""
            )
        role = "assistant" if message.role == Role.ASSISTANT else "user"
        out.append({"role": role, "content": text})
    return out


def _tool_response(result: FunctionResultContent, name: str | None) -> str:
    return f"<tool_response>\n{result.name or name or 'tool'}: {result.result_text()}\n</tool_response>"


def _prompt_ids(tokenizer: Any, chat: list[dict[str, str]]) -> list[int]:
    """Token ids of the chat, through the tokenizer's chat template (ChatML when it has none)."""
    if getattr(tokenizer, "chat_template", None):
        try:
            text = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        except Exception as exc:  # a template may reject a role order; say so instead of a traceback
            raise ProviderError(
                f"the model's chat template rejected the messages: {exc}", provider="local"
            ) from exc
    else:
        text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in chat)
        text += "<|im_start|>assistant\n"
    ids = tokenizer.encode(text, add_special_tokens=False)
    return [int(i) for i in ids]
