#!/usr/bin/env bash
# Install chainform with every extra into ./.venv (if needed) and run the whole test suite.
# Usage: bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
pip_install() {
  # This machine's pip config names local wheel folders that may be absent: hide only those warnings.
  .venv/bin/python -m pip install -q "$@" 2> >(grep -v "^WARNING: Location 'file:" >&2)
}
pip_install --upgrade pip
# torch is pinned: a bare `torch` would pull a multi-GB CUDA build.
pip_install "torch==2.13.0"
pip_install -e '.[all,dev]'
exec .venv/bin/python -m pytest "$@"
