#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the main job: MARFT on math-2agent with the project's
# tiny model, on the CPU. Extra arguments go to `flexmg train`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/flexmg train --algo marft --env math-2agent "$@"
