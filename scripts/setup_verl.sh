#!/usr/bin/env bash
# A separate virtual environment for the verl adapter (.venv-verl): verl 0.9.1 pins
# transformers <5.11, older than flexmg's own, so it cannot share .venv.
#
# `pip install verl` would pull vLLM/SGLang/flash-attn only through its GPU extras; its
# base requirements still include wandb, ray[default], tensorboard and friends that the
# adapter never touches. So verl is installed with --no-deps plus exactly the packages
# its agent loop, dataset and reward modules import, all pinned (docs/integrations/verl.md).
# Caches stay inside the project folder. Idempotent; safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv-verl/bin/python ]; then
  "$PY" -m venv .venv-verl
fi
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$PWD/.cache/pip}"
export HF_HOME="${HF_HOME:-$PWD/.cache/hf}"
PIP=(.venv-verl/bin/python -m pip install -q --disable-pip-version-check)
# The CPU build of torch (a bare `torch` would pull a multi-GB CUDA build).
"${PIP[@]}" "torch==2.13.0"
# verl itself, without its dependency list (see above).
"${PIP[@]}" --no-deps "verl==0.9.1"
# What verl's agent loop, RLHFDataset and reward code import, at the versions verl accepts.
"${PIP[@]}" \
  "transformers==5.10.4" "tensordict==0.10.0" "hydra-core==1.3.8" \
  "ray==2.60.0" "datasets>=3.0" "pandas>=2.0" "pyarrow>=19.0.0" "numpy>=2.0.0" \
  "codetiming" "dill" "pylatexenc" "torchdata" "peft" "accelerate" "pillow" "pydantic>=2" \
  "packaging>=20.0" "cachetools" "fastapi" "uvicorn" "pytest>=8.0"
# flexmg itself (editable) with its core requirements.
"${PIP[@]}" -e .
