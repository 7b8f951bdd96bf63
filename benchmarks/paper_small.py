"""The MARFT paper's comparison at small scale and equal budget: MARFT, MARFT with
parameter sharing, IPPO and a single agent; tiny model, math/code x 2/3/4 agents
(``--variants ... group`` adds the critic-free group baseline as a column).

**Budget rule.** A run's budget is what it samples in training: *actions* (agent
turns) and the *tokens* they generate. Every run makes ``--budget`` (U) PPO updates.
A k-agent team plays ``--episodes-per-update`` (E) episodes per update, k actions
each: U*E*k actions. The single agent compared with it trains on the family's 1-agent
env (``math-1agent``, ``code-1agent``) with k*E one-action episodes per update for the
same U updates: the same U*E*k actions and the same number of optimizer steps (PPO's
minibatches per epoch are a count, not a size). So the single agent has one run per
team size (``<family>-1agent-single-b<k>-s<seed>``), shown in the k-agent row.
Generated tokens cannot be fixed in advance (lengths vary): the trainer records every
update's sampled ``actions`` and ``generated_tokens`` (``metrics.jsonl``), the report
sums them per run and prints them, and flags a row whose runs did not sample the
planned actions or whose columns' mean tokens per run differ by more than
``TOKEN_TOLERANCE``. Evaluation is not budget: every column is evaluated alike.

**Steps.** 1. Train every (variant, env, seed) with ``flexmg train`` (one subprocess
per run, ``--jobs`` at a time, longest first) into ``OUT/runs/``. 2. Evaluate every
run with the leaderboard (``OUT/leaderboard/``): ``--eval-episodes`` held-out episodes
(eval split, greedy; leaderboard seed ``s`` evaluates the run trained with seed ``s``,
and team and single agent see the same prompts). 3. Report team success, correctness
and format, each with a 95% two-level bootstrap CI (seeds resampled, then prompts
within each seed: :func:`flexmg.metrics.bootstrap_ci_over_seeds`) and the
number of distinct held-out prompts, beside the untrained start model (``hf:``
entry ``start``) on the same episodes; then the paired differences on the same
episodes (MARFT - IPPO, each team - the single agent, each column - its start,
...), with the share of graded answers that differ: ``OUT/paper_small.md`` (the tables, the exact
command, the date, the tiny model's warm-start ``weights_sha256``),
``OUT/paper_small.json`` and ``OUT/paper_small.png`` (success with CI bars).

**Time.** The default grid is 120 runs (3 team variants x 6 envs x 5 seeds, and the
single agent at 3 budgets x 2 families x 5 seeds) of 12 updates x 32 episodes. The
projection printed at start uses CPU seconds measured here, one core per run
(``OMP_NUM_THREADS=1``, two runs at a time): ``SECONDS_PER_EPISODE`` per training
episode (rollout and PPO update, steady state; 0.015 s math-1agent to 0.107 s
math-4agent, 0.081 s code-1agent to 0.524 s code-4agent, measured 2026-12-02 with
the tiny model's 80-token code actions), ``RUN_START_SECONDS`` per run, a held-out
episode ``EVAL_FACTOR`` of a training one. The default grid projects to about 104
minutes on 2 free cores: 85 training (2 runs at a time, longest first), 19
evaluating. At the earlier default of 20 updates it projected to 153 minutes, over
the 2-hour budget, once code actions had 80 tokens. On a loaded machine it takes
longer.

Everything resumes: a finished run (``summary.json`` at the budget) is not trained
again, an interrupted run continues from its newest checkpoint (``flexmg train
--resume``), finished leaderboard cells are not re-played.

Usage::

    nice -n 10 python benchmarks/paper_small.py --out runs/paper_small   # the grid, ~104 min
    python benchmarks/paper_small.py --out runs/paper_small --dry-run    # plan and projection
    python benchmarks/paper_small.py --out /tmp/ps --envs math-2agent --seeds 0 1 \\
        --budget 1 --episodes-per-update 4 --train-eval-episodes 4 --eval-episodes 4  # smoke
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from paper_small_plan import (  # noqa: F401 - the grid's names, as the tests read them
    DEFAULT_VARIANTS,
    ENVS,
    GROUP_SIZE,
    SEEDS,
    SINGLE,
    START,
    TEAM_VARIANTS,
    VARIANTS,
    Job,
    make_job,
    plan_jobs,
    planned_actions,
    single_env,
    team_size,
)
from paper_small_report import (  # noqa: F401 - the report's names, as the tests read them
    budget_check,
    build_report,
    measured_budget,
    model_note,
    write_outputs,
)

# Measured CPU seconds (see the module docstring), one core per run.
SECONDS_PER_EPISODE = {
    "math-1agent": 0.015, "math-2agent": 0.043, "math-3agent": 0.072, "math-4agent": 0.107,
    "code-1agent": 0.081, "code-2agent": 0.186, "code-3agent": 0.315, "code-4agent": 0.524,
}  # fmt: skip
SECONDS_PER_ACTION_ELSEWHERE = 0.1  # an env not measured: a rough figure per agent turn
EVAL_FACTOR = 0.3  # a greedy held-out episode costs this share of a training episode
RUN_START_SECONDS = 10.0  # interpreter, model, first-update warm-up, checkpoints, plot
CELL_START_SECONDS = 2.0  # leaderboard: load a run's checkpoint, build the envs


def run_state(run_dir: Path, budget: int) -> str:
    """``"done"`` (trained to the budget), ``"partial"`` (has a checkpoint) or ``"new"``."""
    summary = run_dir / "summary.json"
    if summary.is_file():
        try:
            if int(json.loads(summary.read_text()).get("updates", -1)) >= budget:
                return "done"
        except (OSError, ValueError):
            pass
    if any((run_dir / "checkpoints").glob("step_*.ckpt")):
        return "partial"
    return "new"


def check_run_matches(job: Job) -> str | None:
    """Why an existing run folder does not belong to this grid (``None`` when it does)."""
    path = job.run_dir / "config.json"
    if not path.is_file():
        return None
    try:
        config = json.loads(path.read_text())
        train = config["train"]
    except (OSError, ValueError, KeyError) as exc:
        return f"{path} is unreadable ({exc})"
    want = {"env": job.env, "algo": job.algo, "seed": job.seed}
    want["episodes_per_update"] = job.episodes_per_update
    if job.group_size > 1:
        want["group_size"] = job.group_size
    diff = {k: (train.get(k), v) for k, v in want.items() if train.get(k) != v}
    shared = config.get("policy_config", {}).get("share_parameters")
    if shared is not None and bool(shared) != bool(dict(job.policy).get("share_parameters")):
        diff["share_parameters"] = (shared, not shared)
    if diff:
        return f"{job.run_dir} was trained with other settings (saved, wanted): {diff}"
    return None


def train_config(job: Job, args: argparse.Namespace) -> Any:
    """The :class:`~flexmg.agents.config.TrainConfig` of a job."""
    from flexmg.agents.config import PolicyConfig, TrainConfig

    policy = PolicyConfig(**dict(job.policy), **({"device": args.device} if args.device else {}))
    return TrainConfig(
        env=job.env, algo=job.algo, seed=job.seed, updates=args.budget,
        episodes_per_update=job.episodes_per_update, group_size=job.group_size,
        eval_every=args.budget,
        eval_episodes=args.train_eval_episodes, run_dir=str(job.run_dir), progress=False,
        policy=policy,
    )  # fmt: skip


def train_command(job: Job, args: argparse.Namespace) -> list[str]:
    """The ``flexmg train`` command of a job (resume when it has a checkpoint)."""
    from flexmg.settings import to_argv

    base = [sys.executable, "-m", "flexmg.cli", "train"]
    if run_state(job.run_dir, args.budget) == "partial":
        return [*base, "--resume", str(job.run_dir), "--updates", str(args.budget), "--no-progress"]
    return [*base, *to_argv(train_config(job, args)), *args.train_flags]


def clear_unstarted(run_dir: Path) -> bool:
    """Remove a run folder that was interrupted before its first checkpoint.

    Such a run has nothing to resume from, and ``flexmg train`` refuses a folder
    that already holds a run, so it is trained again from the start.
    """
    if run_state(run_dir, budget=1 << 30) != "new" or not (run_dir / "config.json").is_file():
        return False
    shutil.rmtree(run_dir)
    return True


def child_env(jobs: int) -> dict[str, str]:
    """The environment of a training subprocess: its share of the cores for torch.

    Without a limit each of ``jobs`` runs starts one OpenMP thread per core, and
    the oversubscribed threads spin: here two runs at once went 2-3x slower.
    An ``OMP_NUM_THREADS`` already set by the caller wins.
    """
    env = dict(os.environ)
    if "OMP_NUM_THREADS" not in env:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        env["OMP_NUM_THREADS"] = str(max(1, (cores or 1) // max(1, jobs)))
    return env


def train_one(job: Job, args: argparse.Namespace) -> dict[str, Any]:
    """Train (or resume) one job in a subprocess; its log goes to ``RUN_DIR.log``."""
    if run_state(job.run_dir, args.budget) == "done":
        return {"job": job.label, "status": "done before", "seconds": 0.0}
    clear_unstarted(job.run_dir)
    cmd = train_command(job, args)
    job.run_dir.parent.mkdir(parents=True, exist_ok=True)
    log = job.run_dir.with_suffix(".log")
    t0 = time.monotonic()
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"$ {shlex.join(cmd)}\n")
        fh.flush()
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=child_env(args.jobs))
    seconds = time.monotonic() - t0
    status = "trained" if proc.returncode == 0 else f"FAILED (exit {proc.returncode}, see {log})"
    return {"job": job.label, "status": status, "seconds": seconds}


# ------------------------------------------------------------------------ time projection
def seconds_per_episode(env: str) -> float:
    """Measured training seconds per episode of ``env`` (a rough per-turn figure elsewhere)."""
    return SECONDS_PER_EPISODE.get(env, SECONDS_PER_ACTION_ELSEWHERE * team_size(env))


def run_seconds(job: Job, args: argparse.Namespace) -> float:
    """Projected seconds of one run on one core: start-up, updates, start and end evals."""
    per_episode = seconds_per_episode(job.env)
    train = args.budget * job.episodes_per_update * per_episode
    return RUN_START_SECONDS + train + 2 * args.train_eval_episodes * per_episode * EVAL_FACTOR


def cell_seconds(env: str, args: argparse.Namespace) -> float:
    """Projected seconds of one leaderboard cell (one run or bound, one seed)."""
    return CELL_START_SECONDS + args.eval_episodes * seconds_per_episode(env) * EVAL_FACTOR


def makespan(durations: Sequence[float], workers: int) -> float:
    """Wall time of durations run in order, each on the first free of ``workers``.

    >>> makespan([3.0, 2.0, 2.0, 1.0], 2)
    4.0
    """
    free = [0.0] * max(1, workers)
    for d in durations:
        free[free.index(min(free))] += d
    return max(free)


def projected_minutes(
    args: argparse.Namespace, todo: Sequence[Job], evaluated: Sequence[Job]
) -> tuple[float, float]:
    """(training, evaluation) minutes: ``todo`` trained ``--jobs`` at a time, longest
    first; then one leaderboard cell per ``evaluated`` run and per bound, env and seed."""
    train = makespan(sorted((run_seconds(j, args) for j in todo), reverse=True), args.jobs)
    envs = dict.fromkeys(j.env for j in evaluated)
    cells = [j.env for j in evaluated] + [e for e in envs for _ in args.bounds for _ in args.seeds]
    return train / 60, sum(cell_seconds(e, args) for e in cells) / 60


# ------------------------------------------------------------------------ leaderboard
def leaderboard_config(args: argparse.Namespace, jobs: Sequence[Job]) -> Any:
    """The leaderboard of step 2: every variant's runs (``run:`` entries) plus the bounds."""
    envs_of: dict[str, list[str]] = {}
    for job in jobs:
        envs_of.setdefault(job.variant, [])
        if job.env not in envs_of[job.variant]:
            envs_of[job.variant].append(job.env)
    runs = args.out / "runs"
    entries: list[Any] = [
        {"agent": f"run:{runs}/{{env}}-{variant}-s{{seed}}", "name": variant, "envs": envs}
        for variant, envs in envs_of.items()
    ]
    # the untrained model on the teams' episodes: the start every gain is measured from
    model = model_note(jobs)["model"]
    played = list(dict.fromkeys(j.env for j in jobs))  # the teams' envs and the single's
    entries.append({"agent": f"hf:{model}", "name": START, "envs": played})
    from flexmg.baselines.leaderboard import LeaderboardConfig

    return LeaderboardConfig(
        entries=entries + [f"scripted:{b}" for b in args.bounds],
        envs=list(dict.fromkeys(j.env for j in jobs)),
        seeds=list(args.seeds),
        episodes=args.eval_episodes,
        num_envs=args.num_envs,
        vectorization=args.vectorization,
        out=str(args.out / "leaderboard"),
        progress=not args.no_progress,
    )


# ------------------------------------------------------------------------ main
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = p.add_argument
    add("--out", type=Path, default=Path("runs/paper_small"), help="output folder")
    add("--envs", nargs="+", default=ENVS, help=f"team env ids, the rows (default {ENVS})")
    add("--seeds", nargs="+", type=int, default=SEEDS, help="training seeds (default 0-4)")
    add("--variants", nargs="+", default=DEFAULT_VARIANTS, choices=VARIANTS,
        help="the columns (group: the critic-free baseline, not in the default grid)")  # fmt: skip
    add("--budget", type=int, default=12, help="PPO updates per run (default 12)")
    add("--episodes-per-update", type=int, default=32, help="a k-agent team's (single: k x)")
    add("--group-size", type=int, default=GROUP_SIZE,
        help=f"the group variant's episodes per prompt (default {GROUP_SIZE})")  # fmt: skip
    add("--train-eval-episodes", type=int, default=16, help="the trainer's start/end evals")
    add("--eval-episodes", type=int, default=100, help="held-out episodes per run (default 100)")
    add("--bounds", nargs="*", default=["oracle"], choices=["oracle", "empty", "random"],
        help="scripted reference entries (default oracle)")  # fmt: skip
    add("--jobs", type=int, default=2, help="training runs in parallel (default 2)")
    add("--num-envs", type=int, default=16, help="leaderboard generation batch")
    add("--vectorization", choices=["sync", "async"], default="sync")
    add("--device", help="device of every run (default: the trainer's auto)")
    add("--train-only", action="store_true", help="skip evaluation and report")
    add("--eval-only", action="store_true", help="only evaluation and report")
    add("--dry-run", action="store_true", help="print the plan and projection, run nothing")
    add("--no-progress", action="store_true")
    add("train_flags", nargs="*", help="extra `flexmg train` flags (after --)")
    args = p.parse_args(argv)
    args.command = None if argv is None else shlex.join(argv)
    args.envs, args.seeds = list(dict.fromkeys(args.envs)), list(dict.fromkeys(args.seeds))
    if min(args.budget, args.episodes_per_update, args.eval_episodes, args.jobs) < 1:
        p.error("--budget, --episodes-per-update, --eval-episodes and --jobs must be >= 1")
    if "group" in args.variants and (
        args.group_size < 2 or args.episodes_per_update % args.group_size
    ):
        p.error(
            f"the group variant needs --group-size >= 2 dividing --episodes-per-update "
            f"({args.episodes_per_update}); got {args.group_size}"
        )
    for env in args.envs:
        try:
            team_size(env)
        except ValueError as exc:
            p.error(str(exc))
    return args


def train_all(args: argparse.Namespace, todo: Sequence[Job]) -> list[dict[str, Any]]:
    """Train the runs still to do, longest first, with a progress bar over runs."""
    from tqdm.auto import tqdm

    order = sorted(todo, key=lambda j: -run_seconds(j, args))
    log: list[dict[str, Any]] = []
    with tqdm(total=len(order), unit="run", desc="training", disable=args.no_progress) as bar:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for future in as_completed([pool.submit(train_one, j, args) for j in order]):
                log.append(future.result())
                bar.write(f"{log[-1]['job']}: {log[-1]['status']} ({log[-1]['seconds']:.0f} s)")
                bar.update(1)
    return log


def evaluate_and_report(
    args: argparse.Namespace, jobs: Sequence[Job], training: Sequence[Mapping[str, Any]]
) -> list[Path]:
    """Step 2 (the leaderboard) and step 3 (the report)."""
    from flexmg.baselines.leaderboard import run_leaderboard
    from flexmg.io import atomic_write_json

    config = leaderboard_config(args, jobs)
    atomic_write_json(args.out / "leaderboard.json", config.to_dict(), indent=2)
    results = run_leaderboard(config, echo=False)
    if results.get("skipped"):
        print(f"skipped leaderboard cells: {results['skipped']}", file=sys.stderr)
    return write_outputs(build_report(args, jobs, results, training), args.out)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    jobs = plan_jobs(args)
    mismatched = [r for j in jobs if (r := check_run_matches(j))]
    if mismatched:
        print("\n".join(mismatched), file=sys.stderr)
        print("use another --out folder for a grid with other settings", file=sys.stderr)
        return 2
    todo = [j for j in jobs if not args.eval_only and run_state(j.run_dir, args.budget) != "done"]
    train_min, eval_min = projected_minutes(args, todo, [] if args.train_only else jobs)
    print(
        f"{len(jobs)} runs ({len(todo)} to train, {args.jobs} at a time), about "
        f"{train_min + eval_min:.0f} minutes ({train_min:.0f} training, {eval_min:.0f} "
        "evaluating)",
        flush=True,
    )
    if args.dry_run:
        for job in jobs:
            state = run_state(job.run_dir, args.budget)
            print(f"[{state:7s}] {shlex.join(train_command(job, args))}")
        print(json.dumps(leaderboard_config(args, jobs).to_dict(), indent=2, default=str))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    training = train_all(args, todo) if todo else []
    failed = any(t["status"].startswith("FAILED") for t in training)
    if not args.train_only:
        paths = evaluate_and_report(args, jobs, training)
        print(paths[0].read_text(encoding="utf-8"))
        print("wrote " + ", ".join(map(str, paths)), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
