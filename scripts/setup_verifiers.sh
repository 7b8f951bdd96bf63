#!/usr/bin/env bash
# A separate virtual environment for the verifiers adapter (.venv-verifiers): verifiers
# 0.4.0 pins mcp==2.0.0 while OpenEnv 0.10.0 needs fastmcp (mcp<2.0), so the two cannot
# share .venv. flexmg is installed editable with the dev tools and the verifiers extra;
# caches stay inside the project folder. Idempotent; safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv-verifiers/bin/python ]; then
  "$PY" -m venv .venv-verifiers
fi
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$PWD/.cache/pip}"
# the CPU build of torch (a bare `torch` would pull a multi-GB CUDA build)
.venv-verifiers/bin/python -m pip install -q --disable-pip-version-check \
  "torch==2.13.0" -e ".[train,dev,verifiers]"
