"""Choosing a backend: `local` prefers a prepared ONNX model, `backend=` and `-o backend` force one,
`onnx/<folder>` runs a model folder the user brought, and a missing ONNX model says what to run."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from chainform.clients.registry import get_client
from chainform.errors import ModelNotFoundError, ProviderError
from chainform.local import LocalChatClient, ONNXRuntimeClient, _weights, create_client, prepare
from chainform.types import ChatOptions, Message, ResponseFormat

DOG = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def test_auto_prefers_the_prepared_onnx_model(
    tiny_hf_dir: Path, tiny_onnx_dir: Path, tiny_cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CHAINFORM_CACHE", str(tiny_cache))
    assert _weights.resolve(str(tiny_hf_dir), "auto") == (tiny_onnx_dir, "onnx")
    assert _weights.resolve(str(tiny_hf_dir), "torch") == (tiny_hf_dir, "torch")
    assert _weights.resolve(str(tiny_onnx_dir), "auto") == (tiny_onnx_dir, "onnx")
    assert prepare(str(tiny_hf_dir), backend="onnx", precision="fp32") == tiny_onnx_dir  # cached
    monkeypatch.setenv("CHAINFORM_CACHE", str(tmp_path))  # a cache without the conversion
    assert _weights.resolve(str(tiny_hf_dir), "auto") == (tiny_hf_dir, "torch")


def test_the_onnx_folder_is_complete_and_checksummed(tiny_onnx_dir: Path) -> None:
    manifest = json.loads((tiny_onnx_dir / _weights.MANIFEST).read_text())
    assert manifest["precision"] == "fp32"
    assert {"genai_config.json", "model.onnx", "tokenizer.json"} <= set(manifest["sha256"])
    for name, digest in manifest["sha256"].items():
        assert hashlib.sha256((tiny_onnx_dir / name).read_bytes()).hexdigest() == digest
    assert not [p for p in tiny_onnx_dir.parent.iterdir() if p.name.startswith(".tmp-")]


def test_a_precision_builds_by_its_recipe_and_a_stale_recipe_rebuilds(
    tiny_hf_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """int4 is the mixed k-quant recipe; a folder built by another recipe (an old plain int4) is rebuilt."""
    from chainform.local import _onnx

    commands: list[list[str]] = []

    def builder(cmd: list[str], **_: object) -> object:
        commands.append(cmd)
        out = Path(cmd[cmd.index("-o") + 1])
        out.mkdir(parents=True)
        (out / "genai_config.json").write_text("{}")
        return type("Done", (), {"returncode": 0, "stdout": "", "stderr": ""})()

    monkeypatch.setenv("CHAINFORM_CACHE", str(tmp_path))
    monkeypatch.setattr(_onnx, "require", lambda: None)
    monkeypatch.setattr(_onnx.subprocess, "run", builder)
    target = prepare(str(tiny_hf_dir), backend="onnx", precision="int4", quiet=True)
    assert "matmul_mixed_precision=last_matmul:int8,mixed_layers:int8" in commands[0]
    assert commands[0][commands[0].index("-p") + 1] == "int4"
    assert prepare(str(tiny_hf_dir), backend="onnx", precision="int4", quiet=True) == target
    assert len(commands) == 1  # cached: same precision, same recipe
    manifest = json.loads((target / _weights.MANIFEST).read_text())
    del manifest["builder_args"]  # as written before recipes: plain round-to-nearest int4
    (target / _weights.MANIFEST).write_text(json.dumps(manifest))
    prepare(str(tiny_hf_dir), backend="onnx", precision="int4", quiet=True)
    assert len(commands) == 2


def test_the_onnx_output_layer_runs_on_the_last_position_only(tiny_onnx_dir: Path, tiny_model: Any) -> None:
    """A prefill of many tokens computes one position's logits (the one the loop reads), equal to torch's."""
    import numpy as np
    import onnxruntime as ort
    import torch

    session = ort.InferenceSession(str(tiny_onnx_dir / "model.onnx"), providers=["CPUExecutionProvider"])
    ids = np.arange(100, 140, dtype=np.int64)[None, :]
    feeds: dict[str, object] = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    decoder = json.loads((tiny_onnx_dir / "genai_config.json").read_text())["model"]["decoder"]
    empty = np.zeros((1, decoder["num_key_value_heads"], 0, decoder["head_size"]), dtype=np.float32)
    for graph_input in session.get_inputs():
        if graph_input.name.startswith("past_key_values"):
            feeds[graph_input.name] = empty
    logits = session.run(["logits"], feeds)[0]
    assert logits.shape[:2] == (1, 1)
    with torch.inference_mode():
        expected = tiny_model(input_ids=torch.tensor(ids)).logits[0, -1].numpy()
    np.testing.assert_allclose(logits[0, 0], expected, atol=1e-3)


def test_a_missing_onnx_model_says_what_to_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CHAINFORM_CACHE", str(tmp_path))
    with pytest.raises(ModelNotFoundError, match="chainform local prepare --backend onnx`"):
        LocalChatClient("smollm2", backend="onnx").load()
    with pytest.raises(ModelNotFoundError, match="unknown local backend"):
        LocalChatClient("smollm2", backend="gguf")
    (tmp_path / "genai_config.json").write_text("{}")
    with pytest.raises(ModelNotFoundError, match="runs on the onnx backend only"):
        _weights.resolve(str(tmp_path), "torch")


async def test_backend_option_per_call(
    tiny_hf_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`-o backend onnx` reaches the client as additional_properties and forces that backend."""
    monkeypatch.setenv("CHAINFORM_CACHE", str(tmp_path))
    client = LocalChatClient(str(tiny_hf_dir), max_output_tokens=20)
    response = await client.get_response([Message.user("hi")], ChatOptions(max_output_tokens=5))
    assert response.usage_details is not None and response.usage_details.output_tokens >= 1
    with pytest.raises(ModelNotFoundError, match="--backend onnx --model"):
        await client.get_response(
            [Message.user("hi")], ChatOptions(additional_properties={"backend": "onnx"})
        )


async def test_a_brought_onnx_folder(tiny_onnx_dir: Path, tmp_path: Path) -> None:
    """`onnx/<folder>`: its profile's context window comes from genai_config.json."""
    folder = tmp_path / "my-model"
    shutil.copytree(tiny_onnx_dir, folder)
    config = json.loads((folder / "genai_config.json").read_text())
    config["model"]["context_length"] = 300
    (folder / "genai_config.json").write_text(json.dumps(config))
    client = get_client(f"onnx/{folder}", max_string_length=12)
    assert isinstance(client, ONNXRuntimeClient)
    assert client.model_id == f"onnx/{folder}" and client.profile.provider == "onnx"
    assert client.profile.context_window == 300 and client.profile.supports_tools_with_schema
    options = ChatOptions(response_format=ResponseFormat.json_schema(DOG), temperature=1.0, seed=1)
    response = await client.get_response([Message.user("Invent a dog.")], options)
    jsonschema.validate(json.loads(response.text), DOG)
    with pytest.raises(ProviderError, match="context window is 300"):
        await client.get_response([Message.user("word " * 400)], ChatOptions(max_output_tokens=5))
    with pytest.raises(ModelNotFoundError, match="not an ONNX Runtime GenAI model folder"):
        (folder / "genai_config.json").write_text("{}")
        create_client(f"onnx/{folder}")


def test_thread_defaults(monkeypatch: pytest.MonkeyPatch, tiny_onnx_dir: Path) -> None:
    """ONNX takes every CPU (up to 4): its prefill, most of a long prompt's time, scales with threads;
    torch keeps half (its OpenMP threads spin). CHAINFORM_LOCAL_THREADS and threads= override both."""
    import os

    from chainform.local import _engine, _onnx

    monkeypatch.delenv("CHAINFORM_LOCAL_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert (_engine.thread_count(None, all_cpus=True), _engine.thread_count(None)) == (2, 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert (_engine.thread_count(None, all_cpus=True), _engine.thread_count(None)) == (4, 4)
    monkeypatch.setenv("CHAINFORM_LOCAL_THREADS", "3")
    assert (
        _engine.thread_count(None, all_cpus=True),
        _engine.thread_count(None),
        _engine.thread_count(1),
    ) == (3, 3, 1)
    asked: list[dict[str, object]] = []
    real = _engine.thread_count
    monkeypatch.setattr(_engine, "thread_count", lambda t, **kw: asked.append(kw) or real(t, **kw))
    _onnx._build(tiny_onnx_dir, None)
    assert asked == [{"all_cpus": True}]
