#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the test suite in parallel. Extra arguments go to pytest,
# e.g. `bash scripts/test.sh -m "slow or not slow"` (what CI runs) or `-k sandbox`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -n auto "$@"
