"""The transformers + torch backend: a Hugging Face folder (or in-memory model) behind `_engine.Session`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chainform.local import _engine


def quiet_transformers() -> None:
    """Silence transformers' own progress bars and advisories: chainform reports progress itself."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


@contextlib.contextmanager
def no_gguf_progress() -> Iterator[None]:
    """Silence the tqdm bar transformers' GGUF reader draws while dequantizing (it calls tqdm
    directly, past `disable_progress_bar`); `chainform local prepare` shows its own progress."""
    import functools

    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    original = getattr(gguf_utils, "tqdm")  # noqa: B009 (not re-exported: mypy would refuse the attribute)
    setattr(gguf_utils, "tqdm", functools.partial(original, disable=True))  # noqa: B010
    try:
        yield
    finally:
        setattr(gguf_utils, "tqdm", original)  # noqa: B010


def load(path: Path, threads: int | None = None) -> _engine.Loaded:
    """Load (once per process and folder) the model and tokenizers at `path`."""
    return _engine.load_once(path, "torch", lambda key: _build(key, threads))


def _build(key: Path, threads: int | None) -> _engine.Loaded:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(_engine.thread_count(threads))  # process-wide (torch's rule)
    quiet_transformers()
    tokenizer = AutoTokenizer.from_pretrained(str(key))
    model = AutoModelForCausalLM.from_pretrained(str(key), dtype=torch.float32)
    model.eval()  # type: ignore[no-untyped-call]
    return from_objects(key, model, tokenizer)


def from_objects(path: Path, model: Any, tokenizer: Any) -> _engine.Loaded:
    """Wrap an already built model and tokenizer (tests build tiny random models this way)."""
    import llguidance.hf

    def token_id(token: str) -> int | None:
        found = tokenizer.convert_tokens_to_ids(token)
        return found if isinstance(found, int) and found != tokenizer.unk_token_id else None

    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    extra = [tokenizer.eos_token_id, *(gen_eos if isinstance(gen_eos, list) else [gen_eos])]
    eos_ids = _engine.end_of_turn_ids(token_id, extra)
    lltokenizer = llguidance.hf.from_tokenizer(tokenizer, eos_token=sorted(eos_ids))
    return _engine.Loaded(path, model, tokenizer, lltokenizer, eos_ids, lambda _: _Session(model))


class _Session:
    """Forward passes with the KV cache transformers returns (it grows as needed)."""

    capacity = 1 << 30

    def __init__(self, model: Any) -> None:
        self.model = model
        self.past: Any = None

    def rewind(self, length: int) -> None:
        extra = self.past.get_seq_length() - length if self.past is not None else 0
        if extra > 0:
            self.past.crop(-extra)  # transformers 5: a negative count removes that many tokens

    def feed(self, ids: list[int]) -> Any:
        import torch

        with torch.inference_mode():
            out = self.model(input_ids=torch.tensor([ids]), past_key_values=self.past, use_cache=True)
        self.past = out.past_key_values
        return out.logits[0, -1].float().numpy()
