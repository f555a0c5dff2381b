"""The decode loop: plain torch forward passes with a KV cache, a grammar mask per step, and sampling.

A hand-written loop (rather than `generate()`) because llguidance must see every sampled token and
shape every next-token distribution; it also makes cancellation and streaming trivial.
"""

from __future__ import annotations

import codecs
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chainform.errors import ProviderError, SchemaError
from chainform.types import FinishReason


@dataclass
class Loaded:
    """A model ready to run: weights, HF tokenizer, llguidance tokenizer, end-of-turn ids."""

    path: Path
    model: Any
    tokenizer: Any
    lltokenizer: Any
    eos_ids: frozenset[int]
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


_loaded: dict[Path, Loaded] = {}
_loading = threading.Lock()


def quiet_transformers() -> None:
    """Silence transformers' own progress bars and advisories: chainform reports progress itself."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


def load(path: Path, threads: int | None = None) -> Loaded:
    """Load (once per process and folder) the model and tokenizers at `path`."""
    key = path.resolve()
    with _loading:
        if key in _loaded:
            return _loaded[key]
        import time

        started = time.perf_counter()
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        configure_threads(threads)
        quiet_transformers()
        tokenizer = AutoTokenizer.from_pretrained(str(key))
        model = AutoModelForCausalLM.from_pretrained(str(key), dtype=torch.float32)
        model.eval()  # type: ignore[no-untyped-call]
        loaded = from_objects(key, model, tokenizer)
        loaded.load_seconds = time.perf_counter() - started
        _loaded[key] = loaded
        return loaded


def from_objects(path: Path, model: Any, tokenizer: Any) -> Loaded:
    """Wrap an already built model and tokenizer (tests build tiny random models this way)."""
    import llguidance.hf

    eos = {tokenizer.eos_token_id}
    for token in ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<end_of_turn>"):
        token_id = tokenizer.convert_tokens_to_ids(token)
        if isinstance(token_id, int) and token_id != tokenizer.unk_token_id:
            eos.add(token_id)
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    eos.update(gen_eos if isinstance(gen_eos, list) else [gen_eos])
    eos_ids = frozenset(i for i in eos if isinstance(i, int) and i >= 0)
    lltokenizer = llguidance.hf.from_tokenizer(tokenizer, eos_token=sorted(eos_ids))
    return Loaded(path, model, tokenizer, lltokenizer, eos_ids)


def configure_threads(threads: int | None) -> None:
    """Set torch's intra-op threads: `threads`, else CHAINFORM_LOCAL_THREADS, else half the CPUs (1..4).

    One-token decode steps are tiny; more threads mostly spin and wait. Measured on a busy 2-CPU
    machine: 1 thread decoded 3x faster than torch's default of 2. This is process-wide (torch's rule).
    """
    import torch

    wanted = threads or int(os.environ.get("CHAINFORM_LOCAL_THREADS", "0") or 0)
    if wanted <= 0:
        wanted = max(1, min(4, (os.cpu_count() or 2) // 2))
    torch.set_num_threads(wanted)


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
    import torch

    matcher = _matcher(loaded, grammar) if grammar is not None else None
    scanner = StopScanner(list(stop_sequences or [])) if matcher is None and stop_sequences else None
    generator = torch.Generator().manual_seed(sampling.seed) if sampling.seed is not None else None
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
    with loaded.lock, torch.inference_mode():
        out = loaded.model(input_ids=torch.tensor([prompt_ids]), use_cache=True)
        for _ in range(max_new_tokens):
            if cancelled is not None and cancelled.is_set():
                break
            logits = out.logits[0, -1].float()
            if matcher is not None:
                lands = produced >= land_at and "".join(pieces).startswith(land_after)
                _apply_mask(matcher, logits, loaded.closers() if lands else ())
            _penalize(logits, counts, sampling)
            token = _pick(logits, sampling, generator)
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
            out = loaded.model(
                input_ids=torch.tensor([[token]]), past_key_values=out.past_key_values, use_cache=True
            )
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
    Done in numpy on the tensor's memory: a torch masked_fill spreads 49k elements over OpenMP
    threads, which on a busy machine cost 20 ms a token instead of 0.05 ms.
    """
    import numpy as np

    bits = np.unpackbits(np.frombuffer(matcher.compute_bitmask(), dtype=np.uint8), bitorder="little")
    if matcher.is_error():
        raise SchemaError(f"constrained decoding failed: {matcher.get_error()}")
    scores = logits.numpy()
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
    import torch

    ids = torch.tensor(list(counts))
    freq = torch.tensor(list(counts.values()), dtype=logits.dtype)
    logits[ids] -= (sampling.presence_penalty or 0.0) + (sampling.frequency_penalty or 0.0) * freq


def _pick(logits: Any, sampling: Sampling, generator: Any) -> int:
    import torch

    if not sampling.temperature:
        return int(torch.argmax(logits))
    scores = logits / sampling.temperature
    if sampling.top_k and sampling.top_k > 0:
        kth = torch.topk(scores, min(sampling.top_k, scores.shape[0])).values[-1]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if sampling.top_p is not None and 0 < sampling.top_p < 1:
        sorted_scores, order = torch.sort(scores, descending=True)
        probs = torch.softmax(sorted_scores, dim=-1)
        outside = probs.cumsum(-1) - probs > sampling.top_p
        sorted_scores[outside] = float("-inf")
        scores = torch.full_like(scores, float("-inf")).scatter(0, order, sorted_scores)
    probs = torch.softmax(scores, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


def check_context(prompt_tokens: int, context_window: int) -> int:
    """Tokens left for the answer; a prompt that fills the window is a clear error, not a crash."""
    room = context_window - prompt_tokens
    if room <= 0:
        raise ProviderError(
            f"the prompt is {prompt_tokens} tokens; the local model's context window is {context_window}",
            provider="local",
        )
    return room
