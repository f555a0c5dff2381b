"""Fixtures for the local-model tests: the real SmolLM2 tokenizer (prepared once) and a tiny random model,
run on both backends (torch, and ONNX Runtime GenAI after a conversion with its model builder)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chainform.local import LocalChatClient, prepare

HERE = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the mark into the test's id
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """This folder's tests share one xdist worker (scripts/test.sh runs `--dist loadgroup`): its session
    fixtures (the tokenizer, the tiny model and its ONNX conversion, the loaded models) are made once."""
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.xdist_group("local-model"))


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
def tiny_hf_dir(tiny_model: Any, tokenizer: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model saved as a Hugging Face folder."""
    folder = tmp_path_factory.mktemp("tiny-hf")
    tiny_model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="session")
def tiny_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model cache of its own for the tiny model's ONNX conversion."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def tiny_onnx_dir(tiny_hf_dir: Path, tiny_cache: Path) -> Path:
    """The tiny model converted by `prepare(backend="onnx")` (onnxruntime-genai's model builder)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CHAINFORM_CACHE", str(tiny_cache))
        return prepare(str(tiny_hf_dir), backend="onnx", precision="fp32", quiet=True)


@pytest.fixture(scope="session", params=["torch", "onnx"])
def tiny_loaded(request: pytest.FixtureRequest, tiny_model: Any, tokenizer: Any) -> Any:
    """The same tiny model on each backend: every test that uses it runs on both."""
    if request.param == "onnx":
        from chainform.local import _onnx

        return _onnx.load(request.getfixturevalue("tiny_onnx_dir"))
    from chainform.local import _torch

    return _torch.from_objects(Path("tiny"), tiny_model, tokenizer)


@pytest.fixture
def tiny_client(tiny_loaded: Any) -> LocalChatClient:
    return LocalChatClient("tiny", loaded=tiny_loaded, max_string_length=16, max_output_tokens=200)


@pytest.fixture
def feed_sizes(tiny_loaded: Any) -> Iterator[list[int]]:
    """The size of every forward pass `tiny_loaded` runs during the test (its sessions are wrapped);
    the kept context is dropped before and after."""
    sizes: list[int] = []
    original = tiny_loaded.open_session

    def open_session(n: int) -> Any:
        session = original(n)
        feed = session.feed

        def counted(ids: list[int]) -> Any:
            sizes.append(len(ids))
            return feed(ids)

        session.feed = counted
        return session

    tiny_loaded.open_session = open_session
    tiny_loaded.forget()
    try:
        yield sizes
    finally:
        tiny_loaded.open_session = original
        tiny_loaded.forget()
