"""Credit through the chain, shown: does the never-graded reader learn to pass the problem on?

On ``relay-2agent`` (reader -> solver; only the reader sees the problem, only
the solver is graded) the script trains, from the same warm-started tiny
model, with the same budget and several seeds:

* ``marft``: MARFT (one chain through reader and solver, centralized critic);
* ``ippo``: IPPO (one chain and one value head per role);
* ``marft-abya``: agent-by-agent MARFT (``--agent-interval K``: the reader
  learns for K updates, then the solver, and so on).

After every update it records, on that update's training rollout (sampled)
and every ``--eval-every`` updates on held-out episodes (``split="eval"``,
greedy): the **relay rate** (share of reader messages from which the problem
can be recovered, :func:`flexmg.envs.families.relay.carries_problem`), the
**answer rate** (reader messages whose last number is the answer: the reader
solving instead of relaying) and the **team success**. It writes all figures
to ``OUT/credit_chain.json`` (atomically, after every finished run: a second
call resumes, skipping finished runs), a figure ``OUT/credit_chain.png`` (relay
rate and success against updates, mean and 95% t-interval over seeds) and
prints a table.

**Start.** The shipped checkpoint was warm-started on math transcripts only
unless its ``warmstart.json`` says ``relay_weight > 0``. Without relay data
the reader never writes the problem, so RL has nothing to reinforce; the
script then first fine-tunes the shipped checkpoint for
``--relay-warmstart-steps`` steps on relay-teacher transcripts (the reader
passes the problem on 30% of the time; mixed with math transcripts,
``--relay-share``) and starts every run from that model (``OUT/start/``,
reused on resume). ``--relay-warmstart-steps 0`` starts from the shipped
checkpoint as it is (the default when it already has relay data).

Usage::

    nice -n 10 python benchmarks/credit_chain.py --out runs/credit_chain   # the reported run
    python benchmarks/credit_chain.py --out /tmp/cc --seeds 0 --updates 2 \\
        --episodes-per-update 8 --eval-episodes 8 --relay-warmstart-steps 5   # smoke
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flexmg.io import atomic_write_text

#: Variant -> (algorithm, PPO overrides; ``agent_interval`` None = ``--agent-interval``).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "marft": ("marft", {}),
    "ippo": ("ippo", {}),
    "marft-abya": ("marft", {"agent_interval": None}),
}
FIGURES = ("relay_rate", "expression_rate", "answer_rate", "success_rate")
_EXPRESSION = re.compile(r"\d+\s*[-+*/×÷]\s*\d+")  # "a op b": the shape of a relayed problem


RELAY_FINE_TUNE_LR = 2e-3  # constant learning rate of the in-script relay fine-tune


# ------------------------------------------------------------------ figures of episodes
def chain_figures(results: Sequence[Any], answers: Sequence[str]) -> dict[str, float]:
    """Relay rate, expression rate, answer rate and team success of finished relay episodes.

    The relay rate counts reader messages that carry their problem; the
    expression rate those that hold *some* ``a op b`` (the shape of a relayed
    problem, right numbers or not); the answer rate those whose last number is
    the gold answer (``answers``, in episode order).

    >>> from types import SimpleNamespace as S
    >>> def episode(message, success):
    ...     turn = S(observation={"task": "What is 2 + 3?"}, action=message)
    ...     return S(transcript=[turn], metrics={"success": success})
    >>> eps = [episode("2 + 3", True), episode("\\boxed{5}", True), episode("ok", False)]
    >>> figures = chain_figures(eps, ["5", "5", "5"])
    >>> [round(figures[k], 3) for k in ("relay_rate", "answer_rate", "success_rate")]
    [0.333, 0.333, 0.667]
    >>> chain_figures([episode("4 + 1", False)], ["5"])["expression_rate"]
    1.0
    """
    from flexmg.envs.families.math import last_value
    from flexmg.envs.families.relay import relay_rate

    firsts = [r.transcript[0] for r in results]
    problems = [str(t.observation.get("task", "")) for t in firsts]
    messages = [t.action for t in firsts]
    n = max(1, len(results))
    answered = sum(last_value(m) == a.strip() for m, a in zip(messages, answers, strict=True))
    return {
        "relay_rate": relay_rate(messages, problems),
        "expression_rate": sum(bool(_EXPRESSION.search(m)) for m in messages) / n,
        "answer_rate": answered / n,
        "success_rate": sum(bool(r.metrics.get("success")) for r in results) / n,
        "episodes": len(results),
    }


def _gold_answers(vec: Any) -> list[str]:
    """The gold answer of every env's current task (sync vector env)."""
    return [str(env.task.answer) for env in vec.envs]


# ------------------------------------------------------------------ start model
def shipped_has_relay_data() -> bool:
    """True when the shipped warm start's ``warmstart.json`` says ``relay_weight > 0``."""
    from flexmg.models.tiny.model import TINY_ASSET_DIR

    path = TINY_ASSET_DIR / "warmstart.json"
    info = json.loads(path.read_text()) if path.is_file() else {}
    return float(info.get("relay_weight", 0.0) or 0.0) > 0


def prepare_start(out: Path, steps: int, share: float, seed: int) -> tuple[str, dict[str, Any]]:
    """The model every run starts from: the shipped checkpoint, or it fine-tuned on relay data."""
    from flexmg.models.tiny import warmstart
    from flexmg.models.tiny.model import TINY_ASSET_DIR, load_tiny

    if steps == 0:
        return "tiny", {"model": "shipped", "path": str(TINY_ASSET_DIR), "relay_fine_tune": None}
    folder = out / "start"
    wanted = {"steps": steps, "relay_share": share, "seed": seed, "lr": RELAY_FINE_TUNE_LR}
    manifest = folder / "warmstart.json"
    if manifest.is_file():
        done = json.loads(manifest.read_text()).get("relay_fine_tune", {})
        if {k: done.get(k) for k in wanted} == wanted:
            return str(folder), {"model": "shipped + relay fine-tune (reused)", **done}
    model, _ = load_tiny()
    mixtures: list[tuple[Any, float]] = [(warmstart.relay_mixture(), share)]
    if share < 1.0:
        mixtures.append((warmstart.math_mixture(), 1.0 - share))
    info = warmstart.fine_tune(
        model, mixtures, steps=steps, lr=RELAY_FINE_TUNE_LR, seed=seed, progress=True
    )
    info = {**info, "relay_share": share, "from": str(TINY_ASSET_DIR)}
    warmstart.save(model, {"relay_fine_tune": info}, folder)
    return str(folder), {"model": "shipped + relay fine-tune", **info}


# ------------------------------------------------------------------ one run
def train_run(variant: str, seed: int, args: argparse.Namespace, model: str) -> dict[str, Any]:
    """Train one (variant, seed); returns its per-update train and eval figures."""
    import flexmg
    from flexmg.agents.samples import collect_rollout
    from flexmg.agents.trainer import TrainConfig, Trainer

    algo, ppo = VARIANTS[variant]
    ppo = {k: args.agent_interval if v is None else v for k, v in ppo.items()}
    config = TrainConfig(
        env=args.env, algo=algo, seed=seed, updates=args.updates,
        episodes_per_update=args.episodes_per_update, eval_episodes=args.eval_episodes,
        run_dir=str(args.out / "runs" / f"{variant}-s{seed}"), progress=False,
        policy={"model": model}, ppo=ppo,  # a warm-start folder is the tiny model's kind
    )  # fmt: skip
    trainer = Trainer(config)
    train_vec = flexmg.make_vec(args.env, num_envs=args.episodes_per_update, split="train")
    eval_vec = flexmg.make_vec(args.env, num_envs=args.eval_episodes, split="eval")
    train: list[dict[str, Any]] = []
    evals: list[dict[str, Any]] = []
    start = time.monotonic()

    def evaluate(update: int) -> None:
        collect_rollout(trainer.policy, eval_vec, seed=config.eval_seed, greedy=True)
        figures = chain_figures(eval_vec.episodes(), _gold_answers(eval_vec))
        evals.append({"update": update, **figures})

    from tqdm.auto import tqdm

    try:
        evaluate(0)
        bar = tqdm(range(args.updates), desc=f"{variant} s{seed}", unit="upd", leave=False)
        for update in bar:
            _, stats = trainer.train_step(train_vec, update)
            figures = chain_figures(train_vec.episodes(), _gold_answers(train_vec))
            train.append({"update": update + 1, **figures,
                          "learning_roles": stats.get("learning_roles")})  # fmt: skip
            if (update + 1) % args.eval_every == 0 or update + 1 == args.updates:
                evaluate(update + 1)
            bar.set_postfix(relay=f"{figures['relay_rate']:.2f}",
                            succ=f"{figures['success_rate']:.2f}")  # fmt: skip
    finally:
        train_vec.close()
        eval_vec.close()
    return {"variant": variant, "algo": algo, "seed": seed, "ppo": ppo, "train": train,
            "eval": evals, "seconds": round(time.monotonic() - start, 1)}  # fmt: skip


# ------------------------------------------------------------------ aggregation
def aggregate(runs: Sequence[dict[str, Any]], part: str, key: str) -> list[dict[str, Any]]:
    """Per update: mean and 95% t-interval over seeds of ``key`` in ``part`` (train/eval).

    >>> runs = [{"eval": [{"update": 0, "relay_rate": r}]} for r in (0.2, 0.4)]
    >>> row = aggregate(runs, "eval", "relay_rate")[0]
    >>> row["update"], round(row["mean"], 3), row["n"]
    (0, 0.3, 2)
    """
    from flexmg.metrics import mean_ci

    by_update: dict[int, list[float]] = {}
    for run in runs:
        for row in run[part]:
            by_update.setdefault(int(row["update"]), []).append(float(row[key]))
    return [{"update": u, **mean_ci(v).to_dict()} for u, v in sorted(by_update.items())]


def summarize(runs: dict[str, dict[str, Any]], variants: Sequence[str]) -> dict[str, Any]:
    """Aggregates per variant, part and figure (``summary[variant][part][figure]``)."""
    out: dict[str, Any] = {}
    for variant in variants:
        mine = [r for r in runs.values() if r["variant"] == variant]
        if mine:
            out[variant] = {part: {key: aggregate(mine, part, key) for key in FIGURES}
                            for part in ("train", "eval")}  # fmt: skip
    return out


def plot(summary: dict[str, Any], path: Path, title: str) -> None:
    """Relay rate and team success against updates (held-out and train), 95% CI bands."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from flexmg.io import atomic_write_via

    panels = [("eval", "relay_rate", "held-out relay rate (greedy)"),
              ("eval", "success_rate", "held-out team success (greedy)"),
              ("train", "relay_rate", "train relay rate (sampled)"),
              ("train", "success_rate", "train team success (sampled)")]  # fmt: skip
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    for ax, (part, key, label) in zip(axes.flat, panels, strict=True):
        for variant, parts in summary.items():
            rows = parts[part][key]
            xs = [r["update"] for r in rows]
            ys = [r["mean"] for r in rows]
            (line,) = ax.plot(xs, ys, marker="o" if part == "eval" else None, label=variant)
            lo = [r["ci95"][0] if r["ci95"][0] is not None else r["mean"] for r in rows]
            hi = [r["ci95"][1] if r["ci95"][1] is not None else r["mean"] for r in rows]
            ax.fill_between(xs, [max(0.0, v) for v in lo], [min(1.0, v) for v in hi],
                            color=line.get_color(), alpha=0.15)  # fmt: skip
        ax.set_title(label)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("update")
    axes[0][0].legend(loc="upper left")
    fig.suptitle(title)
    fig.tight_layout()
    try:
        atomic_write_via(path, lambda fh: fig.savefig(fh, format="png", dpi=100))
    finally:
        plt.close(fig)


def table(summary: dict[str, Any]) -> str:
    """Start and end of every figure per variant (mean ± 95% half-width over seeds)."""
    from flexmg.metrics import format_mean_ci

    def cell(row: dict[str, Any]) -> str:
        half = None if row["ci95"][1] is None else row["ci95"][1] - row["mean"]
        return format_mean_ci(row["mean"], half, row["n"], digits=2)

    head = (f"{'variant':<11} {'part':<5} {'relay start':>13} {'relay end':>13} "
            f"{'expr. end':>13} {'answer end':>13} {'success start':>14} {'success end':>13}")  # fmt: skip
    lines = [head, "-" * len(head)]
    for variant, parts in summary.items():
        for part in ("eval", "train"):
            f = parts[part]
            lines.append(
                f"{variant:<11} {part:<5} {cell(f['relay_rate'][0]):>13} "
                f"{cell(f['relay_rate'][-1]):>13} {cell(f['expression_rate'][-1]):>13} "
                f"{cell(f['answer_rate'][-1]):>13} "
                f"{cell(f['success_rate'][0]):>14} {cell(f['success_rate'][-1]):>13}"
            )
    return "\n".join(lines)


# ------------------------------------------------------------------ main
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="results folder (resumable)")
    p.add_argument("--env", default="relay-2agent", choices=["relay-2agent", "relay-3agent"])
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--updates", type=int, default=10, help="PPO updates per run")
    p.add_argument("--episodes-per-update", type=int, default=32)
    p.add_argument("--eval-every", type=int, default=5, help="held-out eval every N updates")
    p.add_argument("--eval-episodes", type=int, default=64, help="held-out episodes per eval")
    p.add_argument("--agent-interval", type=int, default=1, help="K of marft-abya")
    p.add_argument("--relay-warmstart-steps", type=int, default=None,
                   help="relay fine-tune steps before RL (default: 1500, or 0 when the "
                        "shipped checkpoint already has relay data)")  # fmt: skip
    p.add_argument(
        "--relay-share",
        type=float,
        default=1.0,
        help="share of relay episodes in that fine-tune (the rest: math)",
    )
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = p.parse_args(argv)
    for name in ("updates", "episodes_per_update", "eval_every", "eval_episodes"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.agent_interval < 1:
        p.error("--agent-interval must be >= 1 (0 would be plain marft)")
    if not 0.0 < args.relay_share <= 1.0:
        p.error("--relay-share must be in (0, 1]")
    if args.relay_warmstart_steps is None:
        args.relay_warmstart_steps = 0 if shipped_has_relay_data() else 1500
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "credit_chain.json"
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
              if k not in ("out", "variants", "seeds", "threads")}  # fmt: skip
    results: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    if results and results.get("config") != config:
        print(f"credit_chain: {path} holds results of another configuration "
              f"({results.get('config')}); use another --out", file=sys.stderr)  # fmt: skip
        return 2
    model, start = prepare_start(args.out, args.relay_warmstart_steps, args.relay_share, 0)
    results = {"config": config, "start": start, "runs": results.get("runs", {}), **{
        k: v for k, v in results.items() if k not in ("config", "start", "runs")}}  # fmt: skip
    t0 = time.monotonic()
    for variant in args.variants:
        for seed in args.seeds:
            key = f"{variant}-s{seed}"
            if key in results["runs"]:
                print(f"{key}: done already, skipped", file=sys.stderr)
                continue
            results["runs"][key] = train_run(variant, seed, args, model)
            results["summary"] = summarize(results["runs"], list(VARIANTS))
            atomic_write_text(path, json.dumps(results, indent=1))
    summary = summarize(results["runs"], list(VARIANTS))
    results["summary"] = summary
    results["wall_seconds_this_call"] = round(time.monotonic() - t0, 1)
    atomic_write_text(path, json.dumps(results, indent=1))
    title = (f"{args.env}: {args.updates} updates x {args.episodes_per_update} episodes, "
             f"seeds {sorted({r['seed'] for r in results['runs'].values()})}")  # fmt: skip
    plot(summary, args.out / "credit_chain.png", title)
    print(f"start: {start['model']}")
    print(table(summary))
    print(f"written: {path} and {args.out / 'credit_chain.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
