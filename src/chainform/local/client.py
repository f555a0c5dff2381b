"""LocalChatClient: a ChatClient that runs a small model on this machine's CPU, on torch or ONNX Runtime GenAI.

Both backends share everything but the forward pass (`_engine.Session`): the chat template, the
tool-call format, the grammar, sampling, stops and streaming. Decoding runs in a worker thread; text pieces come back to the event loop over a queue, so a long
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
from chainform.clients.profiles.local import CONTEXT_WINDOW, local_profile
from chainform.errors import ModelNotFoundError, ProviderError, UnsupportedOptionError
from chainform.local import _engine, _grammar, _onnx, _toolformat, _weights
from chainform.types import (
    ChatOptions,
    ChatResponseUpdate,
    DataContent,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    Role,
    TextContent,
    TextReasoningContent,
    UriContent,
    UsageContent,
    UsageDetails,
)

DEFAULT_MAX_OUTPUT_TOKENS = 512

__all__ = ["CONTEXT_WINDOW", "LocalChatClient", "ONNXRuntimeClient", "local_profile"]


class LocalChatClient(BaseChatClient):
    """Runs `model` ("smollm2", a Hugging Face folder, a .gguf file or an ORT GenAI folder) on the CPU.

    `backend` is "auto" (ONNX Runtime GenAI when its model is prepared, else torch), "onnx" or
    "torch"; a call's `additional_properties["backend"]` (CLI: `-o backend onnx`) overrides it.
    Loading is lazy (first call) and shared per folder within the process. Defaults: greedy decoding
    (temperature None or 0), at most `max_output_tokens` new tokens, strings capped at
    `max_string_length` characters where a schema sets no maxLength.
    """

    def __init__(
        self,
        model: str = "smollm2",
        *,
        backend: str = "auto",
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        max_string_length: int = _grammar.DEFAULT_MAX_STRING_LENGTH,
        threads: int | None = None,
        middleware: Sequence[Middleware] = (),
        loaded: _engine.Loaded | None = None,
        provider: str = "local",
    ) -> None:
        if backend not in _weights.BACKENDS:
            raise ModelNotFoundError(
                f"unknown local backend {backend!r}; expected one of {', '.join(_weights.BACKENDS)}"
            )
        name = _weights.SMOLLM2_DIR if model.lower() in _weights.ALIASES else Path(model).name
        folder = Path(model).expanduser()
        window = CONTEXT_WINDOW
        if folder.is_dir() and _onnx.is_model_folder(folder):  # a brought ORT GenAI model: its own window
            window = int(_onnx.read_config(folder).get("context_length") or CONTEXT_WINDOW)
        super().__init__(profile=local_profile(name, provider, window), middleware=middleware)
        self.model = model
        self.model_id = f"{provider}/{model}"
        self.backend = backend
        self.max_output_tokens = max_output_tokens
        self.max_string_length = max_string_length
        self.threads = threads
        self._loaded: dict[str, _engine.Loaded] = {}
        if loaded is not None:
            self._loaded = {"auto": loaded, loaded.backend: loaded}

    @classmethod
    def from_objects(
        cls, model: Any, tokenizer: Any, *, name: str = "in-memory", **kwargs: Any
    ) -> LocalChatClient:
        """A client around an already built transformers model and tokenizer (no files needed)."""
        from chainform.local import _torch

        loaded = _torch.from_objects(Path(name), model, tokenizer)
        return cls(name, loaded=loaded, **kwargs)

    def load(self, backend: str | None = None) -> _engine.Loaded:
        """Load the weights now (otherwise the first call does); blocking, safe to call twice."""
        wanted = backend or self.backend
        if wanted not in self._loaded:
            path, chosen = _weights.resolve(self.model, wanted)
            if chosen == "onnx":
                loaded = _onnx.load(path, self.threads)
            else:
                from chainform.local import _torch

                loaded = _torch.load(path, self.threads)
            self._loaded[wanted] = self._loaded[chosen] = loaded
        return self._loaded[wanted]

    async def _stream(
        self, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate]:
        backend = options.additional_properties.get("backend")
        if backend is not None and not isinstance(backend, str):
            raise UnsupportedOptionError("the backend option is 'auto', 'onnx' or 'torch'", provider="local")
        loaded = await asyncio.to_thread(self.load, backend)
        fmt = _toolformat.detect(getattr(loaded.tokenizer, "chat_template", None))
        plan = _grammar.plan(options, self.max_string_length, fmt)
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
                land_after=fmt.open if plan.mode == "text_or_calls" else "",
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
                if start and not fmt.open.startswith(start[: len(fmt.open)]):
                    yield ChatResponseUpdate([TextContent("".join(held))], **base)
                    held = None
            result = await worker
        finally:
            cancelled.set()
        contents: list[Any] = []
        finish = result.finish_reason
        if held is not None:
            calls = fmt.parse(result.text) if plan.may_call else None
            if calls:
                contents.extend(calls)
                finish = FinishReason.TOOL_CALLS
            elif held:
                contents.append(TextContent("".join(held)))
        usage = UsageDetails(input_tokens=len(prompt_ids), output_tokens=result.output_tokens)
        contents.append(UsageContent(usage))
        yield ChatResponseUpdate(contents, finish_reason=finish, **base)


class ONNXRuntimeClient(LocalChatClient):
    """A model folder exported for ONNX Runtime GenAI (`genai_config.json`, e.g. a Phi or Qwen export),
    or "smollm2" once `chainform local prepare --backend onnx` ran: the `onnx/<folder>` models.

    Its profile's context window comes from the folder's config; tool calls use the model family's
    own format, recognised from its chat template (`_toolformat`), SmolLM2's when it names none.
    """

    def __init__(self, model: str, **kwargs: Any) -> None:
        kwargs.setdefault("provider", "onnx")
        super().__init__(model, backend="onnx", **kwargs)


def _chat(messages: Sequence[Message], plan: _grammar.Plan) -> list[dict[str, str]]:
    """Messages in the chat-template form; tool calls and results are written as the model's own text."""
    system = [m.text for m in messages if m.role == Role.SYSTEM and m.text]
    if plan.instructions:
        system.append(plan.instructions)
    out = [{"role": "system", "content": "\n\n".join(system)}] if system else []
    if plan.may_call:
        example = _grammar.example_turns(plan.mode != "text_or_calls", plan.format)
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
            text = (text + "\n" if text else "") + _grammar.render_calls(calls, plan.format)
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
