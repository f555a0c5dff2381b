#!/usr/bin/env bash
# Install chainform with every extra into ./.venv (if needed) and run the whole test suite.
# Usage: bash scripts/test.sh [--stress] [pytest args...]
# --stress: run it with two busy processes beside it (each spins one CPU), stopped when this script
# ends, however it ends; a test that passes only on an idle machine fails here.
set -euo pipefail
cd "$(dirname "$0")/.."
stress=0
if [ "${1:-}" = "--stress" ]; then
  stress=1
  shift
fi
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
if [ "$stress" = 1 ]; then
  busy=()
  stop_busy() { for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null || true; done; }
  trap stop_busy EXIT
  trap 'exit 130' INT TERM
  for _ in 1 2; do
    # Spins while this script lives: it ends on its own even if the script is killed with -9.
    .venv/bin/python -c 'import os, sys
while os.getppid() == int(sys.argv[1]): pass' "$$" &
    busy+=("$!")
  done
  echo "scripts/test.sh --stress: busy processes ${busy[*]} beside the tests"
  .venv/bin/python -m pytest "$@"
else
  exec .venv/bin/python -m pytest "$@"
fi
