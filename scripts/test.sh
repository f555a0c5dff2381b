#!/usr/bin/env bash
# Install chainform with every extra into ./.venv (if needed) and run the whole test suite.
# Usage: bash scripts/test.sh [--stress] [pytest args...]
# The tests run in parallel (pytest-xdist): two workers per logical CPU, at most 8; CHAINFORM_TEST_WORKERS=N
# picks N (0: in this process), as do pytest's own -n/--numprocesses and -p no:xdist. A worker that dies
# fails its test and the run. `-m unit` runs the unit tier alone (docs/testing.md, "Test tiers").
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
# Installed once per version of pyproject.toml and this script (the stamp in .venv says which):
# a second run goes straight to the tests.
stamp=$(cat pyproject.toml scripts/test.sh | sha256sum | cut -d' ' -f1)
if [ "$(cat .venv/.chainform-installed 2>/dev/null)" != "$stamp" ]; then
  pip_install --upgrade pip
  # torch is pinned: a bare `torch` would pull a multi-GB CUDA build.
  pip_install "torch==2.13.0"
  pip_install -e '.[all,dev]'
  echo "$stamp" > .venv/.chainform-installed
fi
# The tests start hundreds of Python processes (the CLI, the docs' examples, kills): with
# PYTHONDONTWRITEBYTECODE set each of them compiles chainform's modules again, and every worker
# rewrites every test module again. Bytecode goes to __pycache__ (git-ignored) for this run.
unset PYTHONDONTWRITEBYTECODE
# Two workers a CPU: many tests spend their time waiting on a process, a socket or Ray, and another
# worker's test runs meanwhile (docs/testing.md has the figures).
workers=$(( $(getconf _NPROCESSORS_ONLN) * 2 ))
workers=$(( workers > 8 ? 8 : workers ))
parallel=(-n "${CHAINFORM_TEST_WORKERS:-$workers}" --dist loadgroup)
for arg in "$@"; do
  case "$arg" in
    # chosen by the caller, or a listing of the tests (no workers needed), or a debugger
    -n | -n* | --numprocesses* | --dist* | no:xdist | -pno:xdist | --collect-only | --co | --pdb) parallel=() ;;
  esac
done
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
  .venv/bin/python -m pytest "${parallel[@]}" "$@"
else
  exec .venv/bin/python -m pytest "${parallel[@]}" "$@"
fi
