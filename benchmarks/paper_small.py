"""The MARFT paper's comparison at small scale: MARFT (with and without parameter
sharing) vs IPPO, tiny model, math/code 2-4 agents, 3 seeds, fixed budget.

Step 1 trains every (variant, env, seed) with ``flexmg train`` (one subprocess
per run, ``--jobs`` at a time) into ``OUT/runs/<env>-<variant>-s<seed>``; the same
budget (``--budget`` PPO updates x ``--episodes-per-update`` episodes) for every
variant. ``--variants ... single`` adds the single-agent baseline: the same
model and budget trained as a lone solver on ``math-1agent`` / ``code-1agent``
(extra columns). Step 2 evaluates every run with the leaderboard (held-out split,
greedy decoding; leaderboard seed ``s`` evaluates the run trained with seed
``s``, so the 95% CI is over training seeds) next to the scripted bounds, and
writes ``OUT/leaderboard/{results.json,leaderboard.md,leaderboard.png}`` and
``OUT/paper_small.md`` (the table and the command that made it).

Everything resumes: a finished run (``summary.json`` at the budget) is not
trained again, an interrupted run continues from its newest checkpoint
(``flexmg train --resume``), and finished leaderboard cells are not re-played.

Usage::

    # the full grid (slow: 54 training runs, 60 with `single`; the coordinator runs it)
    nice -n 10 python benchmarks/paper_small.py --out runs/paper_small --budget 40 --jobs 2
    # a smoke run
    python benchmarks/paper_small.py --out /tmp/ps --envs math-2agent --seeds 0 \\
        --variants marft ippo --budget 1 --episodes-per-update 4 --eval-episodes 4
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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENVS = ["math-2agent", "math-3agent", "math-4agent", "code-2agent", "code-3agent", "code-4agent"]
# variant -> (algorithm, extra `flexmg train` flags)
VARIANTS: dict[str, tuple[str, list[str]]] = {
    "marft": ("marft", []),
    "marft-shared": ("marft", ["--share-parameters"]),
    "ippo": ("ippo", []),
    # the same model as a single solver, same budget, trained and evaluated on the
    # 1-agent env of each family (math-1agent, code-1agent)
    "single": ("marft", []),
}


def single_env(env: str) -> str:
    """The 1-agent env of an env's family: ``math-3agent`` -> ``math-1agent``.

    >>> single_env("code-4agent")
    'code-1agent'
    """
    return env.split("-", 1)[0] + "-1agent"


def team_variants(args: argparse.Namespace) -> list[str]:
    return [v for v in args.variants if v != "single"]


def single_envs(args: argparse.Namespace) -> list[str]:
    """The 1-agent envs of the single-agent baseline (empty unless it is selected)."""
    if "single" not in args.variants:
        return []
    return list(dict.fromkeys(single_env(e) for e in args.envs))


@dataclass
class Job:
    """One training run of the grid."""

    variant: str
    env: str
    seed: int
    run_dir: Path

    @property
    def label(self) -> str:
        return f"{self.env} {self.variant} seed {self.seed}"


def run_template(out: Path, variant: str) -> str:
    """The run folder of a variant with ``{env}``/``{seed}`` left for the leaderboard."""
    return str(out / "runs" / f"{{env}}-{variant}-s{{seed}}")


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


def check_run_matches(job: Job, args: argparse.Namespace) -> str | None:
    """Why an existing run folder does not belong to this grid (``None`` when it does)."""
    path = job.run_dir / "config.json"
    if not path.is_file():
        return None
    try:
        train = json.loads(path.read_text())["train"]
    except (OSError, ValueError, KeyError) as exc:
        return f"{path} is unreadable ({exc})"
    algo, extra = VARIANTS[job.variant]
    want = {"env": job.env, "algo": algo, "seed": job.seed,
            "episodes_per_update": args.episodes_per_update}  # fmt: skip
    diff = {k: (train.get(k), v) for k, v in want.items() if train.get(k) != v}
    shared = json.loads(path.read_text()).get("policy_config", {}).get("share_parameters")
    if shared is not None and bool(shared) != ("--share-parameters" in extra):
        diff["share_parameters"] = (shared, not shared)
    if diff:
        return f"{job.run_dir} was trained with other settings (saved, wanted): {diff}"
    return None


def train_command(job: Job, args: argparse.Namespace) -> list[str]:
    """The ``flexmg train`` command of a job (resume when it has a checkpoint)."""
    base = [sys.executable, "-m", "flexmg.agents.cli", "train"]
    if run_state(job.run_dir, args.budget) == "partial":
        return [*base, "--resume", str(job.run_dir), "--updates", str(args.budget),
                "--no-progress"]  # fmt: skip
    algo, extra = VARIANTS[job.variant]
    cmd = [
        *base, "--algo", algo, "--env", job.env, "--seed", str(job.seed),
        "--updates", str(args.budget), "--episodes-per-update", str(args.episodes_per_update),
        "--eval-every", str(args.budget or 1), "--eval-episodes", str(args.train_eval_episodes),
        "--run-dir", str(job.run_dir), "--no-progress", *extra,
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


def leaderboard_config(args: argparse.Namespace) -> dict[str, Any]:
    """The leaderboard of step 2: every variant's runs plus the scripted bounds."""
    entries: list[Any] = [
        {"agent": f"run:{run_template(args.out, v)}", "name": v, "envs": list(args.envs)}
        for v in team_variants(args)
    ]
    singles = single_envs(args)
    if singles:
        entries.append(
            {"agent": f"run:{run_template(args.out, 'single')}", "name": "single-agent",
             "envs": singles}
        )  # fmt: skip
    entries += [f"scripted:{b}" for b in args.bounds]
    return {
        "entries": entries,
        "envs": list(dict.fromkeys([*args.envs, *singles])),
        "seeds": list(args.seeds),
        "episodes": args.eval_episodes,
        "num_envs": args.num_envs,
        "vectorization": args.vectorization,
        "out": str(args.out / "leaderboard"),
        "progress": not args.no_progress,
    }


def write_report(args: argparse.Namespace, table: str, train_log: list[dict[str, Any]]) -> Path:
    """``OUT/paper_small.md``: the command, the settings and the leaderboard table."""
    from flexmg.io import atomic_write_text

    argv = " ".join(shlex.quote(a) for a in sys.argv[1:]) if args.command is None else args.command
    lines = [
        "# MARFT vs IPPO, small scale (tiny model)",
        "",
        f"Reproduce: `python benchmarks/paper_small.py {argv}`",
        "",
        f"Budget per run: {args.budget} PPO updates x {args.episodes_per_update} episodes; "
        f"training seeds {args.seeds}; evaluation: {args.eval_episodes} held-out episodes "
        "per run (greedy), leaderboard seed s = the run trained with seed s.",
        "",
        table.strip(),
        "",
    ]
    failed = [t for t in train_log if t["status"].startswith("FAILED")]
    if failed:
        lines += ["Training failures:", ""] + [f"- {t['job']}: {t['status']}" for t in failed]
    path = args.out / "paper_small.md"
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("runs/paper_small"), help="output folder")
    p.add_argument("--envs", nargs="+", default=ENVS, help=f"env ids (default {ENVS})")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="training seeds")
    p.add_argument(
        "--variants",
        nargs="+",
        default=["marft", "marft-shared", "ippo"],
        choices=list(VARIANTS),
        help="learners (add 'single' for the single-agent baseline on the 1-agent envs)",
    )
    p.add_argument("--budget", type=int, default=40, help="PPO updates per run (default 40)")
    p.add_argument("--episodes-per-update", type=int, default=64)
    p.add_argument(
        "--train-eval-episodes",
        type=int,
        default=32,
        help="held-out episodes of the trainer's own start/end evals",
    )
    p.add_argument(
        "--eval-episodes", type=int, default=100, help="leaderboard episodes per run (default 100)"
    )
    p.add_argument(
        "--bounds",
        nargs="*",
        default=["oracle", "empty"],
        choices=["oracle", "empty", "random"],
        help="scripted reference entries",
    )
    p.add_argument("--jobs", type=int, default=1, help="training runs in parallel")
    p.add_argument("--num-envs", type=int, default=16, help="leaderboard generation batch")
    p.add_argument("--vectorization", choices=["sync", "async"], default="sync")
    p.add_argument("--device", help="device of every run (default: the trainer's auto)")
    p.add_argument("--train-only", action="store_true", help="skip the leaderboard")
    p.add_argument("--eval-only", action="store_true", help="only the leaderboard")
    p.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("train_flags", nargs="*", help="extra `flexmg train` flags (after --)")
    args = p.parse_args(argv)
    args.command = None if argv is None else " ".join(shlex.quote(a) for a in argv)
    if args.budget < 1 or args.eval_episodes < 1 or args.jobs < 1:
        p.error("--budget, --eval-episodes and --jobs must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    jobs = [
        Job(v, env, s, args.out / "runs" / f"{env}-{v}-s{s}")
        for env in args.envs
        for v in team_variants(args)
        for s in args.seeds
    ]
    jobs += [
        Job("single", env, s, args.out / "runs" / f"{env}-single-s{s}")
        for env in single_envs(args)
        for s in args.seeds
    ]
    mismatched = [r for j in jobs if (r := check_run_matches(j, args))]
    if mismatched:
        print("\n".join(mismatched), file=sys.stderr)
        print("use another --out folder for a grid with other settings", file=sys.stderr)
        return 2
    if args.dry_run:
        for job in jobs:
            print(
                f"[{run_state(job.run_dir, args.budget):7s}] {shlex.join(train_command(job, args))}"
            )
        print(json.dumps(leaderboard_config(args), indent=2, default=str))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    train_log: list[dict[str, Any]] = []
    if not args.eval_only:
        todo = [j for j in jobs if run_state(j.run_dir, args.budget) != "done"]
        print(f"training {len(todo)} of {len(jobs)} runs ({args.jobs} at a time)", flush=True)
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for i, result in enumerate(pool.map(lambda j: train_one(j, args), jobs), 1):
                train_log.append(result)
                if result["status"] != "done before":
                    print(
                        f"[{i}/{len(jobs)}] {result['job']}: {result['status']} "
                        f"({result['seconds']:.0f} s)",
                        flush=True,
                    )
    if args.train_only:
        return 1 if any(t["status"].startswith("FAILED") for t in train_log) else 0
    from flexmg.baselines.leaderboard import LeaderboardConfig, run_leaderboard
    from flexmg.io import atomic_write_text

    config = LeaderboardConfig.from_dict(leaderboard_config(args))
    atomic_write_text(args.out / "leaderboard.json", json.dumps(config.to_dict(), indent=2))
    results = run_leaderboard(config, echo=False)
    table = (args.out / "leaderboard" / "leaderboard.md").read_text(encoding="utf-8")
    print(table)
    report = write_report(args, table, train_log)
    print(f"wrote {report}; skipped cells: {len(results.get('skipped') or [])}", file=sys.stderr)
    return 1 if any(t["status"].startswith("FAILED") for t in train_log) else 0


if __name__ == "__main__":
    sys.exit(main())
