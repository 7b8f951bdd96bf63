#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the main job: a SmolLM2-135M-Instruct team (solver ->
# verifier, one LoRA each) trained on "What is A + B?" (A, B in 0-40) on the CPU, with the
# critic-free group learner (MARFT's update with a per-prompt group baseline instead of the
# critic; `--algo marft` / `--algo ippo` run MARFT / IPPO with their critics: docs/marft.md,
# "MARFT against IPPO on the main job", 10 updates x 3 seeds).
# Every setting is a `flexmg train` flag (docs/marft.md explains each default); extra
# arguments go to `flexmg train` and override them (e.g. --seed 1, --updates 5).
# The learning report: `python benchmarks/team_report.py RUN_DIR` (README, "Results").
# 20 updates of 40 episodes (5 prompts x 8) take 17-20 min on 2 CPU cores (the run alone on
# the machine); the README's earlier 3-seed table used 64 episodes per update (~45 min).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The settings of the runs the README reports.
SOLVER='"solver": "You are the solver. Solve the problem and put the final answer in \\boxed{}."'
VERIFIER='"verifier": "Check the solution your teammate wrote for the task. If it is wrong, correct it. Give the final answer in \\\\boxed{}."'
exec .venv/bin/flexmg train --env math-2agent --algo group --group-size 8 \
  --model smollm2-135m --lora-r 16 --lora-alpha 32 \
  --lora-target-modules q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj \
  --temperature 1.0 --role-temperature verifier=0.7 \
  --role-max-new-tokens solver=48 verifier=32 --micro-batch 16 \
  --lr 2e-4 --epochs 1 --minibatches 1 --entropy-coef 0 --lr-schedule constant \
  --updates 20 --episodes-per-update 40 \
  --eval-episodes 0 --checkpoint-every 2 --keep-checkpoints 0 \
  --kw 'tasks={"name": "arithmetic", "max_operand": 40, "ops": "+"}' \
  "prompts={$SOLVER, $VERIFIER}" \
  "$@"
