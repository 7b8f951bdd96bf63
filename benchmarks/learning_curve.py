"""Run the main job (``flexmg train --algo marft --env math-2agent``) for several seeds.

Each seed runs in its own process with the CLI defaults (tiny model, CPU) and
its own run folder; the script prints, per seed, held-out team success, answer
correctness and format rate at the start and the end (with the number of
distinct held-out prompts), the mean rounds played per held-out episode, the
success gain and the wall time, then mean and spread, and writes them to
``<out>/learning_curve_summary.json``.

``--preset code`` trains the code team (``code-2agent``: coder -> reviewer on the
procedural code family, graded by hidden tests in the real sandbox); its
``reward`` column is the mean hidden-test score.

``--preset multi-round`` is the same job with two rounds (``--horizon 2``): a
team whose first answer is wrong sees the env's feedback ("The final answer
X is incorrect. Try again.") and the first round, and answers again. Mean
rounds falls below 2 as first-round answers improve; success above the
one-round figure is what the second round, and its feedback, add.

Usage::

    nice -n 10 python benchmarks/learning_curve.py                 # seeds 0 1 2
    python benchmarks/learning_curve.py --seeds 0 --algo ippo -- --updates 20
    nice -n 10 python benchmarks/learning_curve.py --preset multi-round
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from flexmg.io import atomic_write_text

#: Preset name -> (env, its kwargs) of the runs (the user's own ``flexmg train`` flags follow).
PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "default": ("math-2agent", {}),
    "multi-round": ("math-2agent", {"horizon": 2}),
    "code": ("code-2agent", {}),
}


def run_seed(
    seed: int, algo: str, env: str, out: Path, extra: list[str],
    env_kwargs: dict[str, Any] | None = None,
) -> dict:  # fmt: skip
    """Train one seed in a subprocess and return its summary.json (plus the wall time)."""
    from flexmg.agents.config import TrainConfig
    from flexmg.settings import to_argv

    run_dir = out / f"{env}-{algo}-seed{seed}"
    config = TrainConfig(algo=algo, env=env, seed=seed, run_dir=str(run_dir), progress=False,
                         env_kwargs=dict(env_kwargs or {}))  # fmt: skip
    cmd = [sys.executable, "-m", "flexmg.cli", "train", *to_argv(config), *extra]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"seed {seed} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["process_seconds"] = wall
    return summary


def over_seeds(run_dirs: list[Path]) -> dict[str, dict[str, object]] | None:
    """Mean over seeds and 95% intervals over seeds and prompts, from the saved evaluations.

    Every seed is evaluated on the same held-out episodes, so the bootstrap draws one
    prompt set per resample for all drawn seeds (``shared_prompts``; runs given their
    own eval sets are resampled each on its own). ``gain`` is
    paired: per episode, end minus start (the same episodes), so its interval is that
    of the improvement, not two overlapping intervals. None when a run saved no
    per-episode evaluation (trained before runs kept them).
    """
    from flexmg.agents.evaluation import read_eval_episodes, saved_eval_updates
    from flexmg.metrics import bootstrap_ci_over_seeds, episode_mean, prompt_values

    first_last = []  # each run's first and last evaluation
    for run in run_dirs:
        updates = saved_eval_updates(run)
        if len(updates) < 2:
            return None
        first_last.append(
            (read_eval_episodes(run, updates[0]), read_eval_episodes(run, updates[-1]))
        )
    out: dict[str, dict[str, object]] = {}
    for key in ("success", "correct", "team_reward"):
        starts = [prompt_values(a, key) for a, _ in first_last]
        finals = [prompt_values(b, key) for _, b in first_last]
        gains = [
            {p: [e - b for b, e in zip(s[p], f[p], strict=True)] for p in s}
            for s, f in zip(starts, finals, strict=True)
        ]
        # the seeds share their held-out prompts unless a run was given its own eval set
        shared = all(set(t) == set(starts[0]) for t in starts)
        entry: dict[str, object] = {
            "seeds": len(run_dirs),
            "prompts": len({p for t in starts for p in t}),
            "shared_prompts": shared,
        }
        for name, tables in (("start", starts), ("end", finals), ("gain", gains)):
            means = [episode_mean(t) or 0.0 for t in tables]
            ci = bootstrap_ci_over_seeds(tables, shared_prompts=shared)
            entry[name] = statistics.fmean(means)
            entry[f"{name}_ci"] = list(ci) if ci else None
        out[key] = entry
    return out


def _with_ci(name: str, value: float, ci: list[float] | None) -> str:
    """``name value [low, high]``, signed for the gain."""
    fmt = "+.3f" if name == "gain" else ".3f"
    return f"{name} {value:{fmt}}" + (f" [{ci[0]:{fmt}}, {ci[1]:{fmt}}]" if ci else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--algo", default="marft")
    parser.add_argument("--env", default=None, help="env id (default: the preset's)")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="default",
                        help="default: one round; multi-round: horizon 2 (feedback)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=None, help="folder for the run folders")
    parser.add_argument("extra", nargs="*", help="flags passed to `flexmg train` (after --)")
    args = parser.parse_args(argv)
    preset_env, preset_kwargs = PRESETS[args.preset]
    args.env = args.env or preset_env
    out = args.out or Path(tempfile.mkdtemp(prefix="flexmg-learning-curve-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"{'seed':>4} {'success':>13} {'correct':>13} {'format':>13} {'reward':>13} "
          f"{'rounds':>11} {'prompts':>7} {'gain':>7} {'wall_s':>7}  run")  # fmt: skip
    rows = []
    for seed in args.seeds:
        s = run_seed(seed, args.algo, args.env, out, args.extra, preset_kwargs)
        gain = s["eval_end"] - s["eval_start"]
        keys = ("eval_start", "eval_end", "correct_start", "correct_end", "format_start",
                "format_end", "reward_start", "reward_end", "mean_rounds_start",
                "mean_rounds_end", "eval_prompts", "eval_start_ci", "eval_end_ci",
                "correct_start_ci", "correct_end_ci", "reward_start_ci", "reward_end_ci",
                "wall_seconds", "process_seconds", "run_dir")  # fmt: skip
        rows.append({"seed": seed, "gain": gain, **{k: s.get(k) for k in keys}})

        def pair(name: str, s: dict = s, digits: int = 3) -> str:
            start, end = s.get(f"{name}_start"), s.get(f"{name}_end")
            return "n/a" if start is None else f"{start:.{digits}f}->{end:.{digits}f}"

        print(f"{seed:>4} {pair('eval'):>13} {pair('correct'):>13} {pair('format'):>13} "
              f"{pair('reward'):>13} {pair('mean_rounds', digits=2):>11} {s.get('eval_prompts') or 0:>7} "
              f"{gain:>+7.3f} {s['process_seconds']:>7.1f}  {s['run_dir']}", flush=True)  # fmt: skip

    def stats(key: str) -> tuple[float, float]:
        vals = [float(r[key] or 0.0) for r in rows]
        return statistics.fmean(vals), statistics.pstdev(vals) if len(vals) > 1 else 0.0

    print("-" * 60)
    for key in ("eval_start", "eval_end", "gain", "correct_start", "correct_end",
                "reward_start", "reward_end", "mean_rounds_end", "process_seconds"):  # fmt: skip
        mean, sd = stats(key)
        lo, hi = min(float(r[key] or 0.0) for r in rows), max(float(r[key] or 0.0) for r in rows)
        print(f"{key:>15}: mean {mean:.3f}  sd {sd:.3f}  min {lo:.3f}  max {hi:.3f}")
    pooled = over_seeds([Path(r["run_dir"]) for r in rows])
    if pooled is None:
        print("no per-episode evaluations saved: no interval over seeds and prompts")
    else:
        prompts = pooled["success"]["prompts"]
        which = "shared" if pooled["success"]["shared_prompts"] else "(per-seed)"
        print(f"mean over {len(rows)} seeds [95% CI over seeds and the {prompts} {which} "
              "prompts; gain paired per episode]:")  # fmt: skip
        for key, p in pooled.items():
            shown = [_with_ci(name, p[name], p[f"{name}_ci"]) for name in ("start", "end", "gain")]
            print(f"{key:>15}: " + "  ".join(shown))
    figures = ("eval_start", "eval_end", "gain", "correct_start", "correct_end", "reward_start",
               "reward_end", "mean_rounds_start", "mean_rounds_end")  # fmt: skip
    result = {"algo": args.algo, "env": args.env, "preset": args.preset, "extra": args.extra,
              "cpus": os.cpu_count(), "runs": rows, "mean": {k: stats(k)[0] for k in figures},
              "sd": {k: stats(k)[1] for k in figures}, "over_seeds": pooled}  # fmt: skip
    atomic_write_text(out / "learning_curve_summary.json", json.dumps(result, indent=2))
    print(f"written: {out / 'learning_curve_summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
