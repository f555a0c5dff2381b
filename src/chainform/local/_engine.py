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
from chainform.types import FinishReason

END_OF_TURN_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<end_of_turn>", "<|end|>")
"""Tokens that end an assistant turn in the chat formats of common small models."""


class Session(Protocol):
    """One generation's model state (its KV cache)."""

    def feed(self, ids: list[int]) -> Any:
        """Run the model on `ids` after what was fed before; the last position's logits (1-D float32
        numpy array, writable, owned by the caller)."""
        ...


@dataclass
class Loaded:
    """A model ready to run: the backend's model, a tokenizer, llguidance's tokenizer, end-of-turn ids.

    `open_session(max_length)` starts a generation of at most `max_length` tokens (prompt included).
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


def thread_count(threads: int | None) -> int:
    """`threads`, else CHAINFORM_LOCAL_THREADS, else half the CPUs (1..4).

    One-token decode steps are tiny; more threads mostly spin and wait. Measured on a busy 2-CPU
    machine: 1 torch thread decoded 3x faster than torch's default of 2.
    """
    wanted = threads or int(os.environ.get("CHAINFORM_LOCAL_THREADS", "0") or 0)
    return wanted if wanted > 0 else max(1, min(4, (os.cpu_count() or 2) // 2))


@dataclass
class Sampling:
    """Decoding settings. temperature None or 0 means greedy (deterministic, no seed needed)."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None


@dataclass
class Result:
    text: str
    output_tokens: int
    finish_reason: FinishReason


class StopScanner:
    """Finds stop sequences in streamed text, holding back only what could still start one."""

    def __init__(self, stops: list[str]) -> None:
        self.stops = [s for s in stops if s]
        self.hold = max((len(s) for s in self.stops), default=1) - 1
        self.pending = ""

    def feed(self, piece: str) -> tuple[str, bool]:
        """Text that is safe to emit now, and whether a stop sequence was found."""
        self.pending += piece
        hits = [i for i in (self.pending.find(s) for s in self.stops) if i >= 0]
        if hits:
            out, self.pending = self.pending[: min(hits)], ""
            return out, True
        cut = max(0, len(self.pending) - self.hold)
        out, self.pending = self.pending[:cut], self.pending[cut:]
        return out, False

    def flush(self) -> str:
        out, self.pending = self.pending, ""
        return out


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

    matcher = _matcher(loaded, grammar) if grammar is not None else None
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
        session = loaded.open_session(len(prompt_ids) + max_new_tokens)
        logits = session.feed(prompt_ids)
        for _ in range(max_new_tokens):
            if cancelled is not None and cancelled.is_set():
                break
            if matcher is not None:
                lands = produced >= land_at and "".join(pieces).startswith(land_after)
                _apply_mask(matcher, logits, loaded.closers() if lands else ())
            _penalize(logits, counts, sampling)
            token = _pick(logits, sampling, rng)
            if matcher is not None and not matcher.consume_token(token):
                raise SchemaError(f"constrained decoding failed: {matcher.get_error()}")
            if token in loaded.eos_ids:
                finish = FinishReason.STOP
                break
            produced += 1
            counts[token] = counts.get(token, 0) + 1
            if not loaded.lltokenizer.is_special_token(token) and push(
                decoder.decode(loaded.lltokenizer.decode_bytes([token]))
            ):
                finish, hit_stop = FinishReason.STOP, True
                break
            if matcher is not None and matcher.is_stopped():
                finish = FinishReason.STOP
                break
            logits = session.feed([token])
    if not hit_stop:
        tail = decoder.decode(b"", final=True)
        if scanner is not None:
            emitted, found = scanner.feed(tail)
            tail = emitted if found else emitted + scanner.flush()
        if tail:
            pieces.append(tail)
            emit(tail)
    return Result("".join(pieces), produced, finish)


def _matcher(loaded: Loaded, grammar: str) -> Any:
    from llguidance import LLMatcher

    matcher = LLMatcher(loaded.lltokenizer, grammar, log_level=0)
    if matcher.is_error():
        raise SchemaError(f"the local model cannot enforce this schema: {matcher.get_error()}")
    return matcher


def _apply_mask(matcher: Any, logits: Any, prefer: tuple[Any, ...] = ()) -> None:
    """Set every token the grammar forbids to -inf (the bitmask has one bit per token, little-endian).

    With `prefer` (bool arrays, best first), only the allowed tokens of the first tier that has any remain.
    Done in numpy (a torch masked_fill spreads 49k elements over OpenMP threads, which on a busy
    machine cost 20 ms a token instead of 0.05 ms).
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


def _penalize(logits: Any, counts: dict[int, int], sampling: Sampling) -> None:
    """OpenAI-style presence/frequency penalties over the tokens generated so far."""
    if not counts or not (sampling.presence_penalty or sampling.frequency_penalty):
        return
    import numpy as np

    ids = np.fromiter(counts, dtype=np.int64)
    freq = np.fromiter(counts.values(), dtype=logits.dtype)
    logits[ids] -= (sampling.presence_penalty or 0.0) + (sampling.frequency_penalty or 0.0) * freq


def _pick(logits: Any, sampling: Sampling, rng: Any) -> int:
    """Greedy without a temperature; otherwise a sample after top-k, then top-p (nucleus) filtering."""
    import numpy as np

    if not sampling.temperature:
        return int(np.argmax(logits))
    scores = logits.astype(np.float64) / sampling.temperature
    if sampling.top_k and 0 < sampling.top_k < scores.shape[0]:
        kth = np.partition(scores, -sampling.top_k)[-sampling.top_k]
        scores[scores < kth] = -np.inf
    probs = np.exp(scores - scores.max())
    probs /= probs.sum()
    if sampling.top_p is not None and 0 < sampling.top_p < 1:
        order = np.argsort(-probs, kind="stable")
        ranked = probs[order]
        outside = np.cumsum(ranked) - ranked > sampling.top_p
        probs[order[outside]] = 0.0
        probs /= probs.sum()
    return int(rng.choice(probs.shape[0], p=probs))


def check_context(prompt_tokens: int, context_window: int) -> int:
    """Tokens left for the answer; a prompt that fills the window is a clear error, not a crash."""
    room = context_window - prompt_tokens
    if room <= 0:
        raise ProviderError(
            f"the prompt is {prompt_tokens} tokens; the local model's context window is {context_window}",
            provider="local",
        )
    return room
