"""The MARFT paper's comparison at small scale and equal budget: MARFT, MARFT with
parameter sharing, IPPO and a single agent; tiny model, math/code x 2/3/4 agents.

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
number of distinct held-out prompts: ``OUT/paper_small.md`` (the tables, the exact
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
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

WARMSTART = Path(__file__).resolve().parent.parent / "models" / "tiny" / "assets" / "warmstart.json"
ENVS = ["math-2agent", "math-3agent", "math-4agent", "code-2agent", "code-3agent", "code-4agent"]
SEEDS = [0, 1, 2, 3, 4]
# team variant -> (algorithm, extra `flexmg train` flags)
TEAM_VARIANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "marft": ("marft", ()),
    "marft-shared": ("marft", ("--share-parameters",)),
    "ippo": ("ippo", ()),
}
SINGLE = "single"  # one run per team size: entry and folder name single-b<k>
SINGLE_ALGO = "marft"  # with one role MARFT and IPPO are the same learner
VARIANTS = [*TEAM_VARIANTS, SINGLE]
TITLES = {"marft": "MARFT", "marft-shared": "MARFT shared", "ippo": "IPPO", SINGLE: "single agent"}
OUTCOMES = {"success": "Team success", "correct": "Correctness", "format": "Format"}
TOKEN_TOLERANCE = 0.10  # a row's mean generated tokens per run: max/min - 1 at most this

# Measured CPU seconds (see the module docstring), one core per run.
SECONDS_PER_EPISODE = {
    "math-1agent": 0.015, "math-2agent": 0.043, "math-3agent": 0.072, "math-4agent": 0.107,
    "code-1agent": 0.081, "code-2agent": 0.186, "code-3agent": 0.315, "code-4agent": 0.524,
}  # fmt: skip
SECONDS_PER_ACTION_ELSEWHERE = 0.1  # an env not measured: a rough figure per agent turn
EVAL_FACTOR = 0.3  # a greedy held-out episode costs this share of a training episode
RUN_START_SECONDS = 10.0  # interpreter, model, first-update warm-up, checkpoints, plot
CELL_START_SECONDS = 2.0  # leaderboard: load a run's checkpoint, build the envs


def team_size(env: str) -> int:
    """The agents of an env id ``<family>-<k>agent``.

    >>> team_size("code-3agent")
    3
    """
    count = env.rsplit("-", 1)[-1].removesuffix("agent")
    if not count.isdigit() or not env.endswith("agent"):
        raise ValueError(f"{env!r} is not a <family>-<k>agent env id")
    return int(count)


def single_env(env: str) -> str:
    """The 1-agent env of an env's family: ``math-3agent`` -> ``math-1agent``.

    >>> single_env("code-4agent")
    'code-1agent'
    """
    return env.rsplit("-", 1)[0] + "-1agent"


@dataclass(frozen=True)
class Job:
    """One training run; ``row`` is the team env it is compared in (``env`` for a team)."""

    variant: str
    row: str
    env: str
    seed: int
    episodes_per_update: int
    run_dir: Path
    algo: str
    flags: tuple[str, ...] = ()

    @property
    def column(self) -> str:
        """The table column: the variant, or ``single`` for every single-agent run."""
        return SINGLE if self.variant.startswith(SINGLE) else self.variant

    @property
    def label(self) -> str:
        return f"{self.env} {self.variant} seed {self.seed}"


def make_job(args: argparse.Namespace, variant: str, row: str, seed: int) -> Job:
    """The run of ``variant`` for a row: the team as it is, the single agent at its budget."""
    runs = args.out / "runs"
    if variant != SINGLE:
        algo, flags = TEAM_VARIANTS[variant]
        run_dir = runs / f"{row}-{variant}-s{seed}"
        return Job(variant, row, row, seed, args.episodes_per_update, run_dir, algo, flags)
    k, env = team_size(row), single_env(row)
    name = f"{SINGLE}-b{k}"
    run_dir = runs / f"{env}-{name}-s{seed}"
    return Job(name, row, env, seed, k * args.episodes_per_update, run_dir, SINGLE_ALGO)


def plan_jobs(args: argparse.Namespace) -> list[Job]:
    """Every run of the grid: variant x env x seed (the single agent per team size)."""
    return [
        make_job(args, v, row, s) for v in args.variants for row in args.envs for s in args.seeds
    ]


def planned_actions(job: Job, updates: int) -> int:
    """The actions a run samples: updates x episodes per update x agents per episode."""
    return updates * job.episodes_per_update * team_size(job.env)


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
    diff = {k: (train.get(k), v) for k, v in want.items() if train.get(k) != v}
    shared = config.get("policy_config", {}).get("share_parameters")
    if shared is not None and bool(shared) != ("--share-parameters" in job.flags):
        diff["share_parameters"] = (shared, not shared)
    if diff:
        return f"{job.run_dir} was trained with other settings (saved, wanted): {diff}"
    return None


def train_command(job: Job, args: argparse.Namespace) -> list[str]:
    """The ``flexmg train`` command of a job (resume when it has a checkpoint)."""
    base = [sys.executable, "-m", "flexmg.cli", "train"]
    if run_state(job.run_dir, args.budget) == "partial":
        return [*base, "--resume", str(job.run_dir), "--updates", str(args.budget), "--no-progress"]
    cmd = [
        *base, "--algo", job.algo, "--env", job.env, "--seed", str(job.seed),
        "--updates", str(args.budget), "--episodes-per-update", str(job.episodes_per_update),
        "--eval-every", str(args.budget), "--eval-episodes", str(args.train_eval_episodes),
        "--run-dir", str(job.run_dir), "--no-progress", *job.flags,
    ]  # fmt: skip
    if args.device:
        cmd += ["--device", args.device]
    return cmd + list(args.train_flags)


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
def leaderboard_config(args: argparse.Namespace, jobs: Sequence[Job]) -> dict[str, Any]:
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
    return {
        "entries": entries + [f"scripted:{b}" for b in args.bounds],
        "envs": list(dict.fromkeys(j.env for j in jobs)),
        "seeds": list(args.seeds),
        "episodes": args.eval_episodes,
        "num_envs": args.num_envs,
        "vectorization": args.vectorization,
        "out": str(args.out / "leaderboard"),
        "progress": not args.no_progress,
    }


# ------------------------------------------------------------------------ statistics
def measured_budget(run_dir: Path) -> dict[str, int] | None:
    """A run's training updates, episodes, actions and generated tokens (``metrics.jsonl``).

    ``None`` when the run has no such records (not trained, or trained before the
    trainer counted actions and tokens).
    """
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return None
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    train = [r for r in records if r.get("kind") == "train"]
    if not train or any("actions" not in r or "generated_tokens" not in r for r in train):
        return None
    total = {k: sum(int(r[k]) for r in train) for k in ("episodes", "actions", "generated_tokens")}
    return {"updates": len(train), **total}


def episodes_by_seed(results: Mapping[str, Any], entry: str, env: str) -> dict[int, list]:
    """The leaderboard's episode records of one entry on one env, per seed."""
    return {
        int(cell["seed"]): list(cell.get("episodes") or [])
        for cell in results.get("cells", {}).values()
        if cell.get("current", True) and cell.get("entry") == entry and cell.get("env") == env
    }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def outcome_stats(episodes: Mapping[int, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Success, correctness and format of one column of one row, from its seeds' episodes.

    Each outcome's ``mean`` is the mean over seeds of that seed's episode mean, its
    ``ci`` the two-level bootstrap interval (seeds, then prompts with their episodes);
    ``prompts`` counts the distinct prompts over all seeds.
    """
    from flexmg.metrics import bootstrap_ci_over_seeds, episode_mean, prompt_key, team_outcome

    seeds = sorted(episodes)
    keyed = [[(prompt_key(e["metrics"], i), e["metrics"]) for i, e in enumerate(episodes[s])]
             for s in seeds]  # fmt: skip
    out: dict[str, Any] = {
        "seeds": seeds,
        "episodes": sum(len(eps) for eps in keyed),
        "prompts": len({p for eps in keyed for p, _ in eps}),
    }
    for outcome in OUTCOMES:
        groups: list[dict[str, list[float]]] = []
        for eps in keyed:
            values: dict[str, list[float]] = {}
            for prompt, metrics in eps:
                values.setdefault(prompt, []).append(team_outcome(metrics)[outcome])
            groups.append(values)
        means = [m for g in groups if (m := episode_mean(g)) is not None]
        ci = bootstrap_ci_over_seeds(groups)
        out[outcome] = {"mean": _mean(means) if means else None, "ci": list(ci) if ci else None}
    return out


def budget_check(columns: Mapping[str, Mapping[str, Any]], planned: int) -> dict[str, Any]:
    """Are a row's budgets equal? Actions as planned in every run, tokens within tolerance.

    >>> budget_check({"a": {"actions": [8, 8], "tokens_mean": 100.0},
    ...               "b": {"actions": [8], "tokens_mean": 105.0}}, planned=8)["equal"]
    True
    """
    actions = [a for c in columns.values() for a in c["actions"]]
    tokens = [c["tokens_mean"] for c in columns.values() if c["tokens_mean"]]
    spread = max(tokens) / min(tokens) - 1 if tokens else None
    actions_ok = bool(actions) and all(a == planned for a in actions)
    tokens_ok = spread is not None and spread <= TOKEN_TOLERANCE
    return {
        "planned_actions": planned,
        "actions_as_planned": actions_ok,
        "token_spread": spread,
        "equal": actions_ok and tokens_ok,
    }


def row_report(
    row: str, jobs: Sequence[Job], results: Mapping[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    """One row of the tables: every column's outcomes and measured budget, and the check."""
    columns: dict[str, Any] = {}
    for column in VARIANTS:
        runs = [j for j in jobs if j.row == row and j.column == column]
        if not runs:
            continue
        budgets = [b for j in runs if (b := measured_budget(j.run_dir)) is not None]
        tokens = [b["generated_tokens"] for b in budgets]
        columns[column] = {
            "entry": runs[0].variant,
            "env": runs[0].env,
            "runs": len(runs),
            **outcome_stats(episodes_by_seed(results, runs[0].variant, runs[0].env)),
            "actions": [b["actions"] for b in budgets],
            "tokens": tokens,
            "tokens_mean": _mean(tokens) if tokens else None,
        }
    planned = args.budget * args.episodes_per_update * team_size(row)
    budget = budget_check(columns, planned)
    return {"env": row, "agents": team_size(row), "columns": columns, "budget": budget}


# ------------------------------------------------------------------------ report
def model_note(jobs: Sequence[Job]) -> dict[str, Any]:
    """The model the runs trained (from a run's config) and the tiny model's weights sha."""
    model = "tiny"
    for job in jobs:
        path = job.run_dir / "config.json"
        if path.is_file():
            model = str(json.loads(path.read_text()).get("policy_config", {}).get("model", model))
            break
    sha = None
    if model == "tiny" and WARMSTART.is_file():
        sha = json.loads(WARMSTART.read_text()).get("weights_sha256")
    return {"model": model, "weights_sha256": sha}


def format_outcome(column: Mapping[str, Any] | None, outcome: str, seeds: int) -> str:
    """``0.420 [0.310, 0.530]`` (``*``: not every seed evaluated; ``n/a``: none).

    >>> format_outcome({"seeds": [0], "success": {"mean": 0.5, "ci": [0.25, 0.75]}}, "success", 2)
    '0.500 [0.250, 0.750]*'
    """
    if not column or column[outcome]["mean"] is None:
        return "n/a"
    value, ci = column[outcome], column[outcome]["ci"]
    text = f"{value['mean']:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
    return text + ("*" if len(column["seeds"]) < seeds else "")


def shown_columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return [c for c in VARIANTS if any(c in r["columns"] for r in rows)]


def outcome_table(rows: Sequence[Mapping[str, Any]], outcome: str, seeds: int) -> list[str]:
    """A Markdown table of one outcome: a row per env, a column per variant."""
    columns = shown_columns(rows)
    lines = [
        "| env | prompts | " + " | ".join(TITLES[c] for c in columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for r in rows:
        prompts = sorted({r["columns"][c]["prompts"] for c in columns if c in r["columns"]})
        cells = [format_outcome(r["columns"].get(c), outcome, seeds) for c in columns]
        lines.append(f"| {r['env']} | {'/'.join(map(str, prompts))} | " + " | ".join(cells) + " |")
    return lines


def budget_cell(column: Mapping[str, Any] | None) -> str:
    """``actions / tokens`` of a column's runs (distinct action counts, mean tokens).

    >>> budget_cell({"actions": [64, 64], "tokens_mean": 655.5})
    '64 / 656'
    """
    if not column or not column["actions"]:
        return "n/a"
    actions = "/".join(map(str, sorted(set(column["actions"]))))
    return f"{actions} / {column['tokens_mean']:.0f}"


def budget_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """A Markdown table of the measured budgets: actions and mean generated tokens per run."""
    columns = shown_columns(rows)
    lines = [
        "| env | planned actions | " + " | ".join(TITLES[c] for c in columns)
        + " | token spread | equal |",
        "|---|---|" + "---|" * len(columns) + "---|---|",
    ]  # fmt: skip
    for r in rows:
        b = r["budget"]
        spread = "n/a" if b["token_spread"] is None else f"{100 * b['token_spread']:.1f}%"
        cells = [budget_cell(r["columns"].get(c)) for c in columns]
        cells += [spread, "yes" if b["equal"] else "NO"]
        lines.append(f"| {r['env']} | {b['planned_actions']} | " + " | ".join(cells) + " |")
    return lines


def report_markdown(report: Mapping[str, Any]) -> str:
    """``paper_small.md``: what was run, how it was measured, the tables."""
    s, model = report["settings"], report["model"]
    sha = model["weights_sha256"]
    lines = [
        "# MARFT, MARFT shared, IPPO and a single agent at equal budget (small scale)",
        "",
        f"Date: {report['date']}. Model: `{model['model']}`"
        + (f" (warm start weights_sha256 `{sha}`)." if sha else "."),
        "",
        f"Reproduce: `{report['command']}`",
        "",
        f"Budget per run: {s['budget']} PPO updates. A k-agent team plays "
        f"{s['episodes_per_update']} episodes per update (k actions each); the single agent "
        f"of the k-agent row plays k x {s['episodes_per_update']} one-action episodes per "
        "update on the family's 1-agent env: the same actions. Generated tokens are measured: "
        "a row is `equal` when every run sampled the planned actions and the columns' mean "
        f"tokens per run differ by at most {100 * s['token_tolerance']:.0f}% (max/min - 1).",
        "",
        f"Evaluation: {s['eval_episodes']} held-out episodes per run (eval split, greedy) for "
        f"training seeds {s['seeds']}; `prompts`: distinct held-out prompts over all seeds. "
        "Mean over seeds of each seed's episode mean, [95% CI]: two-level bootstrap (seeds "
        "resampled, then prompts within each seed, each with all its episodes). "
        "Correctness and format are the graded role's answer. `*`: not every seed "
        "evaluated; `n/a`: not run.",
        "",
    ]
    for outcome, title in OUTCOMES.items():
        lines += [f"## {title}", "", *outcome_table(report["rows"], outcome, len(s["seeds"])), ""]
    lines += ["## Budget per run (measured: actions / mean generated tokens)", ""]
    lines += [*budget_table(report["rows"]), ""]
    if s["bounds"]:
        lines += [f"Scripted bounds ({', '.join(s['bounds'])}): `leaderboard/leaderboard.md`.", ""]
    failed = [t for t in report["training"] if t["status"].startswith("FAILED")]
    if failed:
        lines += ["Training failures:", "", *(f"- {t['job']}: {t['status']}" for t in failed), ""]
    return "\n".join(lines)


def write_chart(report: Mapping[str, Any], path: Path) -> None:
    """``paper_small.png``: team success per env and column, the 95% CI as error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from flexmg.io import atomic_write_via

    rows = report["rows"]
    columns = shown_columns(rows)
    width = 0.8 / max(1, len(columns))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(rows)), 4))
    for i, column in enumerate(columns):
        xs, ys, low, high = [], [], [], []
        for x, r in enumerate(rows):
            value = (r["columns"].get(column) or {}).get("success") or {}
            if value.get("mean") is None:
                continue
            lo, hi = value["ci"] or (value["mean"], value["mean"])
            xs.append(x + (i - (len(columns) - 1) / 2) * width)
            ys.append(value["mean"])
            low.append(value["mean"] - lo)
            high.append(hi - value["mean"])
        ax.bar(xs, ys, width, yerr=[low, high], capsize=3, label=TITLES[column])
    ax.set_xticks(range(len(rows)), [r["env"] for r in rows])
    ax.set_ylabel("held-out team success")
    ax.set_ylim(0, 1.02)
    ax.set_title("equal budget; 95% CI over seeds and prompts")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    try:
        atomic_write_via(path, lambda fh: fig.savefig(fh, format="png", dpi=100))
    finally:
        plt.close(fig)


def build_report(
    args: argparse.Namespace,
    jobs: Sequence[Job],
    results: Mapping[str, Any],
    training: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """Everything ``paper_small.{md,json,png}`` show."""
    argv = args.command if args.command is not None else shlex.join(sys.argv[1:])
    settings = {
        k: getattr(args, k)
        for k in ("budget", "episodes_per_update", "seeds", "envs", "variants", "eval_episodes",
                  "train_eval_episodes", "bounds")
    }  # fmt: skip
    return {
        "command": f"python benchmarks/paper_small.py {argv}".strip(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "model": model_note(jobs),
        "settings": {**settings, "token_tolerance": TOKEN_TOLERANCE},
        "rows": [row_report(row, jobs, results, args) for row in args.envs],
        "training": list(training),
    }


def write_outputs(report: Mapping[str, Any], out: Path) -> list[Path]:
    """``OUT/paper_small.{md,json,png}`` (atomic writes)."""
    from flexmg.io import atomic_write_json, atomic_write_text

    paths = [out / "paper_small.md", out / "paper_small.json", out / "paper_small.png"]
    atomic_write_text(paths[0], report_markdown(report))
    atomic_write_json(paths[1], report, indent=2)
    write_chart(report, paths[2])
    return paths


# ------------------------------------------------------------------------ main
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = p.add_argument
    add("--out", type=Path, default=Path("runs/paper_small"), help="output folder")
    add("--envs", nargs="+", default=ENVS, help=f"team env ids, the rows (default {ENVS})")
    add("--seeds", nargs="+", type=int, default=SEEDS, help="training seeds (default 0-4)")
    add("--variants", nargs="+", default=VARIANTS, choices=VARIANTS, help="the columns")
    add("--budget", type=int, default=12, help="PPO updates per run (default 12)")
    add("--episodes-per-update", type=int, default=32, help="a k-agent team's (single: k x)")
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
    from flexmg.baselines.leaderboard import LeaderboardConfig, run_leaderboard
    from flexmg.io import atomic_write_json

    config = LeaderboardConfig.from_dict(leaderboard_config(args, jobs))
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
        print(json.dumps(leaderboard_config(args, jobs), indent=2, default=str))
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
