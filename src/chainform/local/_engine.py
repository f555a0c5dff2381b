"""The decode loop shared by both backends: a grammar mask per step, penalties, sampling, stops, streaming.

A hand-written loop (rather than a library's `generate()`) because llguidance must see every sampled
token and shape every next-token distribution; it also makes cancellation and streaming trivial.
A backend only supplies a `Session`: feed token ids, get the next-token logits as a numpy array.
The loop itself is numpy only, so the ONNX backend never imports torch.
"""

from __future__ import annotations

import codecs
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from chainform.errors import ProviderError, SchemaError
from chainform.local._sampling import Sampling as Sampling  # re-exported: the one name callers use
from chainform.local._sampling import StopScanner, penalize, pick
from chainform.types import FinishReason

END_OF_TURN_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<end_of_turn>", "<|end|>")
"""Tokens that end an assistant turn in the chat formats of common small models."""


class Session(Protocol):
    """A model's KV state: what was fed so far, and room for `capacity` tokens in all."""

    capacity: int

    def feed(self, ids: list[int]) -> Any:
        """Run the model on `ids` after what was fed before; the last position's logits (1-D float32
        numpy array, writable, owned by the caller)."""
        ...

    def rewind(self, length: int) -> None:
        """Forget all but the first `length` tokens fed."""
        ...


class Context:
    """A session and the tokens it has seen, kept after a generation so the next one can skip the
    prefix they share.

    Each call of a tool chain repeats the previous prompt (system prompt, tool list, worked example)
    and the call the model wrote, then adds the tool's result: rewinding to the shared prefix turns a
    prefill of the whole conversation into one of the new turn.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self.tokens: list[int] = []

    def feed(self, ids: list[int]) -> Any:
        logits = self.session.feed(ids)
        self.tokens.extend(ids)
        return logits

    def shared(self, ids: list[int]) -> int:
        """How many leading tokens of `ids` the session holds already (leaving at least one to feed)."""
        n = 0
        for a, b in zip(self.tokens, ids[:-1], strict=False):
            if a != b:
                break
            n += 1
        return n

    def restart(self, ids: list[int], keep: int) -> Any:
        self.session.rewind(keep)
        del self.tokens[keep:]
        return self.feed(ids[keep:])


@dataclass
class Loaded:
    """A model ready to run: the backend's model, a tokenizer, llguidance's tokenizer, end-of-turn ids.

    `open_session(max_length)` starts a KV state for at least `max_length` tokens (prompt included).
    """

    path: Path
    model: Any
    tokenizer: Any
    lltokenizer: Any
    eos_ids: frozenset[int]
    open_session: Callable[[int], Session]
    backend: str = "torch"
    lock: threading.Lock = field(default_factory=threading.Lock)
    load_seconds: float = 0.0
    _closers: tuple[Any, Any] | None = field(default=None, repr=False, compare=False)
    _context: Context | None = field(default=None, repr=False, compare=False)
    _grammars: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def prefill(self, prompt_ids: list[int], max_length: int) -> tuple[Context, Any]:
        """A context that has seen `prompt_ids`, and the logits after them: the last generation's
        context rewound to the prefix it shares with this prompt where it has room, else a new one."""
        context = self._context
        keep = context.shared(prompt_ids) if context is not None else 0
        if context is not None and keep and context.session.capacity >= max_length:
            return context, context.restart(prompt_ids, keep)
        self._context = None  # the old KV cache goes before a new one is allocated
        context = Context(self.open_session(max_length))
        logits = context.feed(prompt_ids)
        self._context = context
        return context, logits

    def forget(self) -> None:
        """Drop the kept KV cache (after a failed or cancelled generation, or to free its memory)."""
        self._context = None

    def matcher(self, grammar: str) -> Any:
        """A fresh llguidance matcher for `grammar`: compiled once per grammar, then copied (a tool
        chain asks for the same grammar on every turn)."""
        from llguidance import LLMatcher

        compiled = self._grammars.get(grammar)
        if compiled is None:
            compiled = LLMatcher(self.lltokenizer, grammar, log_level=0)
            if compiled.is_error():
                raise SchemaError(f"the local model cannot enforce this schema: {compiled.get_error()}")
            if len(self._grammars) >= 16:
                self._grammars.pop(next(iter(self._grammars)))
            self._grammars[grammar] = compiled
        return compiled.deep_copy()

    def closers(self) -> tuple[Any, Any]:
        """Tokens that end JSON values, as two numpy bool arrays over the vocabulary (built once):
        those with a `"` (closing a string comes first: inside one, brackets are mere text), then
        those with `]` or `}`. Neither may contain `[{,:`, which continue a value; end-of-turn is in both.
        """
        if self._closers is None:
            import numpy as np

            size = self.lltokenizer.vocab_size
            quotes = np.zeros(size, dtype=np.bool_)
            brackets = np.zeros(size, dtype=np.bool_)
            for token in range(size):
                text = self.lltokenizer.decode_bytes([token])
                if any(c in text for c in b"[{,:"):
                    continue
                quotes[token] = b'"' in text
                brackets[token] = not quotes[token] and (b"]" in text or b"}" in text)
            ends = [i for i in self.eos_ids if i < size]
            quotes[ends] = brackets[ends] = True
            self._closers = (quotes, brackets)
        return self._closers


_loaded: dict[tuple[Path, str], Loaded] = {}
_loading = threading.Lock()


def load_once(path: Path, backend: str, build: Callable[[Path], Loaded]) -> Loaded:
    """The model at `path` on `backend`, built by `build` once per process; the build is timed."""
    key = (path.resolve(), backend)
    with _loading:
        if key not in _loaded:
            started = time.perf_counter()
            loaded = build(key[0])
            loaded.load_seconds = time.perf_counter() - started
            _loaded[key] = loaded
        return _loaded[key]


def end_of_turn_ids(token_id: Callable[[str], int | None], extra: Iterable[Any] = ()) -> frozenset[int]:
    """The ids that end a turn: `extra` (the model's configured eos ids) plus the known end-of-turn
    tokens that the vocabulary has (`token_id` returns None for a token it lacks)."""
    found = [token_id(token) for token in END_OF_TURN_TOKENS]
    return frozenset(i for i in (*found, *extra) if isinstance(i, int) and i >= 0)


def thread_count(threads: int | None, *, all_cpus: bool = False) -> int:
    """`threads`, else CHAINFORM_LOCAL_THREADS, else a default: every CPU up to 4 with `all_cpus`
    (the ONNX backend), half the CPUs (1..4) otherwise (torch).

    ONNX Runtime: a long prompt spends nearly all its time in the prefill, which is compute-bound and
    scales with threads, while one-token steps barely change. torch: its OpenMP threads spin, so on a
    busy machine fewer threads decode faster (figures in docs/local-model.md).
    """
    wanted = threads or int(os.environ.get("CHAINFORM_LOCAL_THREADS", "0") or 0)
    if wanted > 0:
        return wanted
    cpus = os.cpu_count() or 2
    return max(1, min(4, cpus if all_cpus else cpus // 2))


@dataclass
class Result:
    text: str
    output_tokens: int
    finish_reason: FinishReason


def generate(
    loaded: Loaded,
    prompt_ids: list[int],
    *,
    max_new_tokens: int,
    sampling: Sampling,
    grammar: str | None = None,
    stop_sequences: list[str] | None = None,
    emit: Callable[[str], None] = lambda _: None,
    cancelled: threading.Event | None = None,
    landing: int | None = None,
    land_after: str = "",
) -> Result:
    """Generate up to `max_new_tokens`, calling `emit` with each new piece of text.

    With a grammar, stop sequences are not applied: the grammar decides where the output ends, and
    cutting it would break the validity it guarantees. Instead, once only `landing` tokens (default:
    a quarter of the budget, at least 16) remain, the grammar-allowed tokens that close strings,
    arrays and objects are preferred, so a looping model still finishes a valid value in budget;
    `land_after` limits that to output starting with it (a tool call, not a free-text answer).
    """
    import numpy as np

    matcher = loaded.matcher(grammar) if grammar is not None else None
    scanner = StopScanner(list(stop_sequences or [])) if matcher is None and stop_sequences else None
    rng = np.random.default_rng(sampling.seed)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    counts: dict[int, int] = {}
    pieces: list[str] = []
    finish = FinishReason.LENGTH
    produced = 0
    hit_stop = False

    def push(piece: str) -> bool:
        if scanner is not None:
            piece, hit = scanner.feed(piece)
        else:
            hit = False
        if piece:
            pieces.append(piece)
            emit(piece)
        return hit

    land_at = max_new_tokens - (landing if landing is not None else max(16, max_new_tokens // 4))
    with loaded.lock:
        try:
            context, logits = loaded.prefill(prompt_ids, len(prompt_ids) + max_new_tokens)
            while produced < max_new_tokens:
                if cancelled is not None and cancelled.is_set():
                    break
                if matcher is not None:
                    lands = produced >= land_at and "".join(pieces).startswith(land_after)
                    _apply_mask(matcher, logits, loaded.closers() if lands else ())
                penalize(logits, counts, sampling)
                token = pick(logits, sampling, rng)
                if matcher is not None and not matcher.consume_token(token):
                    raise SchemaError(f"constrained decoding failed: {matcher.get_error()}")
                if token in loaded.eos_ids:
                    finish = FinishReason.STOP
                    break
                new = [token, *_forced(matcher, max_new_tokens - produced - 1)]
                produced += len(new)
                for t in new:
                    counts[t] = counts.get(t, 0) + 1
                text = "".join(decoder.decode(loaded.lltokenizer.decode_bytes([t])) for t in new
                               if not loaded.lltokenizer.is_special_token(t))  # fmt: skip
                if push(text):
                    finish, hit_stop = FinishReason.STOP, True
                    break
                if matcher is not None and matcher.is_stopped():
                    finish = FinishReason.STOP
                    break
                logits = context.feed(new)
        except BaseException:
            loaded.forget()  # the KV cache may hold part of what failed
            raise
    if not hit_stop:
        tail = decoder.decode(b"", final=True)
        if scanner is not None:
            emitted, found = scanner.feed(tail)
            tail = emitted if found else emitted + scanner.flush()
        if tail:
            pieces.append(tail)
            emit(tail)
    return Result("".join(pieces), produced, finish)


def _forced(matcher: Any, room: int) -> list[int]:
    """The tokens the grammar allows no alternative to from here (up to `room` of them), consumed.

    They join the sampled token in one forward pass instead of one step each: in a tool call, the
    tool's name and the keys up to its first argument; in a schema answer, each key and its punctuation.
    """
    if matcher is None or room <= 0 or matcher.is_stopped():
        return []
    forced = [int(t) for t in matcher.compute_ff_tokens()[:room]]
    if forced and not matcher.consume_tokens(forced):
        raise SchemaError(f"constrained decoding failed: {matcher.get_error()}")
    return forced


def _apply_mask(matcher: Any, logits: Any, prefer: tuple[Any, ...] = ()) -> None:
    """Set every token the grammar forbids to -inf (the bitmask has one bit per token, little-endian).

    With `prefer` (bool arrays, best first), only the allowed tokens of the first tier that has any remain.
    Done in numpy: a torch masked_fill spreads the 49k elements over OpenMP threads, which on a busy
    machine costs far more than the mask itself.
    """
    import numpy as np

    bits = np.unpackbits(np.frombuffer(matcher.compute_bitmask(), dtype=np.uint8), bitorder="little")
    if matcher.is_error():
        raise SchemaError(f"constrained decoding failed: {matcher.get_error()}")
    scores = logits
    n = min(len(bits), scores.shape[0])
    allowed = bits[:n] == 1
    if not allowed.any():
        raise SchemaError("constrained decoding reached a state where no token is allowed")
    for tier in prefer:
        m = min(n, len(tier))
        preferred = np.zeros(n, dtype=np.bool_)
        preferred[:m] = allowed[:m] & tier[:m]
        if preferred.any():
            allowed = preferred
            break
    scores[:n][~allowed] = -np.inf
    scores[n:] = -np.inf


def check_context(prompt_tokens: int, context_window: int) -> int:
    """Tokens left for the answer; a prompt that fills the window is a clear error naming both lengths
    (never a silent cut: which part of a document matters is the caller's choice)."""
    room = context_window - prompt_tokens
    if room <= 0:
        raise ProviderError(
            f"the prompt is {prompt_tokens} tokens; the local model's context window is {context_window}"
            " tokens (prompt and answer together); nothing was cut: shorten or split the document",
            provider="local",
        )
    return room
