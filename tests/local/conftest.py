"""Fixtures for the local-model tests: the real SmolLM2 tokenizer (prepared once) and a tiny random model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chainform.local import LocalChatClient, prepare


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """The converted SmolLM2 folder; the first run downloads and converts it (about a minute)."""
    return prepare(quiet=True)


@pytest.fixture(scope="session")
def tokenizer(smollm2_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(smollm2_dir))


@pytest.fixture(scope="session")
def tiny_model(tokenizer: Any) -> Any:
    """A 2-layer Llama with random weights over SmolLM2's vocabulary: fast, and it knows nothing,
    so any structure in its output comes from the grammar."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        tie_word_embeddings=False,
    )
    return LlamaForCausalLM(config).eval()


@pytest.fixture(scope="session")
def tiny_loaded(tiny_model: Any, tokenizer: Any) -> Any:
    from chainform.local import _engine

    return _engine.from_objects(Path("tiny"), tiny_model, tokenizer)


@pytest.fixture
def tiny_client(tiny_loaded: Any) -> LocalChatClient:
    return LocalChatClient("tiny", loaded=tiny_loaded, max_string_length=16, max_output_tokens=200)
