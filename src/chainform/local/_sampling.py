"""Turning one step's logits into a token, and free text into what may be shown: sampling settings,
OpenAI-style penalties, greedy / top-k / top-p draws (numpy, so either backend draws the same token for
the same seed), and the stop-sequence scanner."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Sampling:
    """Decoding settings. temperature None or 0 means greedy (deterministic, no seed needed)."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None


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


def penalize(logits: Any, counts: dict[int, int], sampling: Sampling) -> None:
    """OpenAI-style presence/frequency penalties over the tokens generated so far."""
    if not counts or not (sampling.presence_penalty or sampling.frequency_penalty):
        return
    import numpy as np

    ids = np.fromiter(counts, dtype=np.int64)
    freq = np.fromiter(counts.values(), dtype=logits.dtype)
    logits[ids] -= (sampling.presence_penalty or 0.0) + (sampling.frequency_penalty or 0.0) * freq


def pick(logits: Any, sampling: Sampling, rng: Any) -> int:
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
