"""The ONNX Runtime GenAI backend: an ORT GenAI model folder behind `_engine.Session`, and the converter.

ORT GenAI runs the forward passes (its KV cache, its quantized kernels); the shared loop in `_engine`
keeps the sampling, the llguidance mask and the landing near the budget's end, so both backends
behave the same. ORT GenAI's own guidance (`set_guidance`) enforces the same grammars, but it was
slower here (58.6 vs 71.9 constrained tokens/s on int4 weights, 2 threads) and cannot prefer closing tokens
near the end of the budget. Nothing here imports torch or transformers: loading is what a
command-line user waits for, and torch's import alone costs more than this whole load.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from chainform.errors import ModelNotFoundError, ProviderError
from chainform.local import _engine

CONFIG = "genai_config.json"
HEADROOM = 1024
"""Tokens of KV room a session gets beyond its first generation, for the next turns of a chain."""
LAST_TOKEN_LOGITS = "prune_lm_head=true"
"""Every recipe's builder option: the output layer runs on the last position only. The loop reads
only the last position's logits, and on a 2,612-token prompt the full output layer was a fifth of
the prefill's matrix work and a 513 MB logits tensor (prefill 7.5 s -> 5.7 s, the same tokens)."""
RECIPES: dict[str, tuple[str, ...]] = {
    "int8": ("-p", "int8", "--extra_options", LAST_TOKEN_LOGITS),
    "int4": (
        "-p", "int4", "--extra_options", "algo_config=k_quant",
        "matmul_mixed_precision=last_matmul:int8,mixed_layers:int8", "shared_embeddings=false",
        LAST_TOKEN_LOGITS,
    ),
    "fp32": ("-p", "fp32", "--extra_options", LAST_TOKEN_LOGITS),
}  # fmt: skip
"""The model builder's arguments per precision (a cache built by other arguments is rebuilt by the next
`prepare`); int8, the default, is the one whose answers match torch's
float32 weights (8 of 8 weather prompts decided alike, the README's task right). "int4" is k-quant int4
with the output layer and llama.cpp's most sensitive layers in int8: about 1.35x int8's tokens/s and the
README's task right, but it called the weather tool on 3 of those 8 prompts where int8 and torch call it
on 5. Plain round-to-nearest int4 (the builder's default) is faster still but breaks the answers
(the README's task answers 1405), so it is not offered."""
PRECISIONS = tuple(RECIPES)


def is_model_folder(path: Path) -> bool:
    return (path / CONFIG).is_file()


def read_config(path: Path) -> dict[str, Any]:
    """The folder's genai_config.json "model" section; a clear error when it is missing or broken."""
    try:
        data = json.loads((path / CONFIG).read_text(encoding="utf-8"))
        model = data["model"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelNotFoundError(
            f"{path} is not an ONNX Runtime GenAI model folder ({CONFIG}: {exc})"
        ) from None
    if not isinstance(model, dict):
        raise ModelNotFoundError(f"{path}/{CONFIG} has no 'model' object")
    return model


def require() -> Any:
    """The onnxruntime_genai module, or an error that says what to install."""
    try:
        import onnxruntime_genai
    except ImportError as exc:
        raise ModelNotFoundError(
            f"the ONNX backend needs onnxruntime-genai ({exc}); install chainform[local]"
        ) from None
    return onnxruntime_genai


def load(path: Path, threads: int | None = None) -> _engine.Loaded:
    """Load (once per process and folder) the ORT GenAI model at `path`, with its tokenizers."""
    return _engine.load_once(path, "onnx", lambda key: _build(key, threads))


def _build(key: Path, threads: int | None) -> _engine.Loaded:
    config = read_config(key)
    og = require()
    import llguidance

    og_config = og.Config(str(key))
    count = _engine.thread_count(threads, all_cpus=True)
    options = {"intra_op_num_threads": count, "inter_op_num_threads": 1}
    og_config.overlay(json.dumps({"model": {"decoder": {"session_options": options}}}))
    try:
        model = og.Model(og_config)
        tokenizer_json = (key / "tokenizer.json").read_text(encoding="utf-8")
    except (OSError, RuntimeError) as exc:
        raise ModelNotFoundError(f"cannot load the ONNX model at {key}: {exc}") from None
    vocab = {t["content"]: t["id"] for t in json.loads(tokenizer_json).get("added_tokens", [])}
    eos = config.get("eos_token_id")
    eos_ids = _engine.end_of_turn_ids(vocab.get, eos if isinstance(eos, list) else [eos])
    lltokenizer = llguidance.LLTokenizer(tokenizer_json, eos_token=sorted(eos_ids) or None)
    tokenizer = TemplateTokenizer(lltokenizer, key)
    window = int(config.get("context_length") or 0) or 1 << 30

    def open_session(max_length: int) -> _Session:
        return _Session(og, model, max_length, window)

    return _engine.Loaded(key, model, tokenizer, lltokenizer, eos_ids, open_session, backend="onnx")


class _Session:
    """One ORT GenAI generator: `append_tokens` runs the model, `get_logits` reads the last step.

    Its KV buffer is allocated for `capacity` tokens up front, so it gets room beyond this
    generation's (up to the context window): the next turn of a chain then fits and reuses it.
    """

    def __init__(self, og: Any, model: Any, max_length: int, window: int) -> None:
        self.capacity = max(max_length, min(window, max_length + HEADROOM))
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=self.capacity)
        self.generator = og.Generator(model, params)

    def feed(self, ids: list[int]) -> Any:
        import numpy as np

        self.generator.append_tokens(np.asarray(ids, dtype=np.int32))
        return np.array(self.generator.get_logits()[0, -1], dtype=np.float32)

    def rewind(self, length: int) -> None:
        self.generator.rewind_to(length)


class TemplateTokenizer:
    """The two tokenizer calls the client makes (chat template, encode) without transformers.

    Encoding goes through llguidance's tokenizer (the Hugging Face tokenizers library inside it);
    the chat template is the folder's Jinja template, rendered in a sandbox as transformers does.
    """

    def __init__(self, lltokenizer: Any, folder: Path) -> None:
        self.lltokenizer = lltokenizer
        settings = _json_or_empty(folder / "tokenizer_config.json")
        template_file = folder / "chat_template.jinja"
        template = template_file.read_text(encoding="utf-8") if template_file.is_file() else None
        template = template or settings.get("chat_template")
        if isinstance(template, list):  # named templates: [{"name": "default", "template": "..."}]
            named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
            template = named.get("default")
        self.chat_template: str | None = template if isinstance(template, str) else None
        self.special = {
            name: value.get("content") if isinstance(value, dict) else value
            for name in ("bos_token", "eos_token", "pad_token", "unk_token")
            if (value := settings.get(name)) is not None
        }

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [int(i) for i in self.lltokenizer.tokenize_str(text, parse_special=True)]

    def apply_chat_template(
        self, chat: list[dict[str, str]], *, tokenize: bool = False, add_generation_prompt: bool = True
    ) -> str:
        from jinja2.exceptions import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(message: str) -> None:
            raise TemplateError(message)

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = raise_exception
        template = env.from_string(self.chat_template or "")
        return template.render(messages=chat, add_generation_prompt=add_generation_prompt, **self.special)


def _json_or_empty(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def convert(source: Path, out: Path, precision: str, progress: Any) -> None:
    """Build the ORT GenAI model of the Hugging Face folder `source` into `out` (CPU, `precision`).

    The builder runs in a child process: it imports torch and prints its own progress, and a crash
    in it must not take the caller down.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    require()
    progress.step(f"building the ONNX model ({precision}) with onnxruntime-genai's model builder")
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(source), "-o", str(out)]
    cmd += [*RECIPES[precision], "-e", "cpu", "-c", str(out.parent / "builder-cache")]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not is_model_folder(out):
        raise ProviderError(
            f"the ONNX model builder failed: {(proc.stderr or proc.stdout).strip()[-800:]}", provider="local"
        )
