"""TRL's GRPOTrainer on flexmg's math-1agent task: the peer of ``flexmg train``, at an equal budget.

**Train** (``--out DIR``): SmolLM2-135M-Instruct (``--model``) learns with TRL's
``GRPOTrainer`` on what ``flexmg train --env math-1agent`` would give it
(``equal_budget.py``): the train split's prompts at the seeds flexmg's trainer plays,
in its order, with flexmg's chat prompt; reward = the env's own score of the
completion (the value, however written, plus the 0.1 format term); ``--prompts`` x
``--samples`` completions (8 x 8) of at most ``--max-new-tokens`` (48) tokens per step
at temperature 1.0; LoRA r16 a32 on the seven projections; lr 2e-4 constant (the
main job's schedule; TRL's default would decay it); ``--steps`` steps. Writes in ``DIR``:

* ``adapter/``: the LoRA adapter in peft's layout (``PeftModel.from_pretrained(base,
  DIR/adapter)`` loads it in plain transformers);
* ``run.json``: the settings, the wall time of each step, the mean reward of each step,
  the total training time.

**Evaluate** (``--evaluate DIR``): the adapter and the base model on the same
``--prompts`` distinct prompts of the **test** split (and ``--phrasing-prompts`` in
wordings never used in training), one greedy and one sampled draw (temperature 1.0,
the same random stream for both) per prompt, through flexmg's decoder and env; the
paired learning report (:func:`flexmg.report.learning_report`: correctness and format,
greedy and sampled, start = base, end = adapter, paired gains with 95% bootstrap
intervals over prompts, transitions, answer kinds) is printed and written as
``report.json`` and ``report.md`` in ``DIR``.

Usage::

    python benchmarks/trl_grpo_baseline.py --out runs/trl-grpo-s0 --steps 10
    python benchmarks/trl_grpo_baseline.py --evaluate runs/trl-grpo-s0 --prompts 300
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from equal_budget import (
    ENV,
    LORA_TARGETS,
    Budget,
    env_reward,
    grpo_config,
    load,
    lora_config,
    peak_rss_mb,
    resolve_device,
    tasks_option,
    trl_rows,
)
from flexmg.io import atomic_write_json, atomic_write_text

ADAPTER = "adapter"
RUN = "run.json"


def train(budget: Budget, out: Path, trl: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train with GRPOTrainer; save the adapter and ``run.json`` in ``out``; return the run record."""
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    if (out / ADAPTER).exists() or (out / RUN).exists():
        raise FileExistsError(
            f"{out} already holds a run ({ADAPTER}/ or {RUN}); choose another --out"
        )
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    torch.manual_seed(budget.seed)
    model, tokenizer = load(budget)
    chat = bool(getattr(tokenizer, "chat_template", None))
    reward = env_reward(budget)
    with tempfile.TemporaryDirectory(prefix="trl-grpo-", dir=out) as scratch:
        trainer = GRPOTrainer(
            model=model, processing_class=tokenizer, reward_funcs=reward,
            args=grpo_config(budget, scratch, **dict(trl or {})),
            train_dataset=Dataset.from_list(trl_rows(budget, chat)),
            peft_config=lora_config(budget),
        )  # fmt: skip
        load_s = time.monotonic() - t0
        step_seconds: list[float] = []

        class StepTimes(TrainerCallback):
            def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                self.start = time.monotonic()

            def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                step_seconds.append(time.monotonic() - self.start)
                print(f"step {len(step_seconds)}/{budget.steps}: {step_seconds[-1]:.1f} s",
                      flush=True)  # fmt: skip

        trainer.add_callback(StepTimes())
        t1 = time.monotonic()
        trainer.train()
        train_s = time.monotonic() - t1
        rewards = [e["rewards/flexmg_reward/mean"] for e in trainer.state.log_history
                   if "rewards/flexmg_reward/mean" in e]  # fmt: skip
        staged = Path(scratch) / ADAPTER
        trainer.model.save_pretrained(str(staged))
        os.replace(staged, out / ADAPTER)  # the adapter appears whole or not at all
    record = {
        "trainer": "trl.GRPOTrainer", "env": ENV, "budget": budget.to_dict(),
        "lora_targets": list(LORA_TARGETS), "loss_type": trainer.loss_type,
        "gradient_checkpointing": bool(trainer.args.gradient_checkpointing),
        "prompts_trained": [list(dict.fromkeys(c)) for c in reward.calls],  # type: ignore[attr-defined]
        "step_seconds": step_seconds, "reward": rewards, "train_seconds": train_s,
        "load_seconds": load_s, "peak_rss_mb": peak_rss_mb(), "adapter": ADAPTER,
    }  # fmt: skip
    atomic_write_json(out / RUN, record, indent=2)
    return record


def _play(model: Any, tokenizer: Any, budget: Budget, prompts: int, kwargs: dict) -> dict:
    """One greedy and one sampled episode per distinct test prompt (flexmg's decoder and env)."""
    from flexmg.evaluation import play_prompts
    from flexmg.models.actor import ModelActor
    from flexmg.models.config import SamplingConfig

    greedy = ModelActor(model, tokenizer, budget.max_new_tokens, greedy=True)
    sampled = ModelActor(model, tokenizer, budget.max_new_tokens,
                         sampling=SamplingConfig(temperature=budget.temperature), seed=budget.seed)  # fmt: skip
    return play_prompts(greedy, sampled, ENV, prompts=prompts, n=1, split="test",
                        env_kwargs=kwargs, progress=lambda m: print("  " + m, flush=True))  # fmt: skip


def per_minute(report: dict[str, Any], train_seconds: float) -> dict[str, float]:
    """The team's paired correctness gains (greedy, sampled) per minute of training."""
    minutes = max(train_seconds, 1e-9) / 60.0
    team = report.get("team") or {}
    return {mode: team[mode]["correct"]["gain"] / minutes
            for mode in ("greedy", "sampled") if "correct" in (team.get(mode) or {})}  # fmt: skip


def evaluation_sets(
    budget: Budget, prompts: int, phrasing_prompts: int
) -> dict[str, tuple[dict[str, Any], int]]:
    """The env keywords and prompt count of each held-out set: the test split, unseen phrasings.

    Both keep the trained prompt (the solver's instructions); only the task's phrasing differs.
    """
    sets = {"test": (budget.env_kwargs, prompts)}
    if phrasing_prompts:
        unseen = {**budget.env_kwargs, "tasks": {**budget.tasks, "phrasing": "unseen"}}
        sets["unseen phrasings"] = (unseen, phrasing_prompts)
    return sets


def evaluate(run_dir: Path, prompts: int = 300, phrasing_prompts: int = 0,
             device: str = "cpu") -> dict[str, Any]:  # fmt: skip
    """The base model vs the run's adapter on the same test prompts: the paired learning report."""
    from peft import PeftModel

    from flexmg.report import learning_report, render_report

    if not (run_dir / RUN).is_file() or not (run_dir / ADAPTER).is_dir():
        raise FileNotFoundError(f"{run_dir}: no {RUN} and {ADAPTER}/ there; train first (--out)")
    record = json.loads((run_dir / RUN).read_text())
    budget = Budget.from_dict({**record["budget"], "device": device})
    sets = evaluation_sets(budget, prompts, phrasing_prompts)
    t0 = time.monotonic()
    model, tokenizer = load(budget)
    start = {}
    for name, (kwargs, n) in sets.items():
        print(f"base model ({name})", flush=True)
        start[name] = _play(model, tokenizer, budget, n, kwargs)
    tuned = PeftModel.from_pretrained(model, str(run_dir / ADAPTER))
    tuned.eval()
    out: dict[str, Any] = {"run_dir": str(run_dir), "model": budget.model,
                           "steps": budget.steps, "samples": 1}  # fmt: skip
    text, ends = [], {}
    for name, (kwargs, n) in sets.items():
        print(f"adapter ({name})", flush=True)
        end = ends[name] = _play(tuned, tokenizer, budget, n, kwargs)
        report = learning_report(start[name], end, ks=(1,))
        out[name] = report
        title = f"TRL GRPOTrainer, {budget.steps} steps: base model vs adapter, {name}"
        text.append(render_report(report, title))
    out["train_seconds"] = float(record["train_seconds"])
    out["gain_per_train_minute"] = per_minute(out["test"], out["train_seconds"])
    text.append(
        f"Training took {out['train_seconds'] / 60:.1f} min ({budget.steps} steps); test "
        "correctness gained per minute of training: "
        + ", ".join(f"{k} {v:+.4f}" for k, v in out["gain_per_train_minute"].items())
        + "."
    )
    out["seconds"] = time.monotonic() - t0
    atomic_write_json(run_dir / "report.json", out, indent=2)
    # the episodes, as benchmarks/team_report.py keeps them: seeds_report.py --against pairs them
    episodes = {"key": f"{prompts}-{phrasing_prompts}-1", "update": budget.steps,
                "start": start, "end": ends}  # fmt: skip
    atomic_write_json(run_dir / f"report_{budget.steps}.episodes.json", episodes)
    atomic_write_text(run_dir / "report.md", "\n\n".join(text))
    print("\n\n".join(text))
    print(f"written: {run_dir / 'report.md'} ({out['seconds']:.0f} s)")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--out", type=Path, help="train; the run folder to write")
    mode.add_argument("--evaluate", type=Path, metavar="RUN_DIR", help="score a trained run")
    parser.add_argument("--model", default="smollm2-135m", help="a zoo name, folder or HF id")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--prompts", type=int, default=None,
                        help="training: prompts per step (8); --evaluate: test prompts (300)")  # fmt: skip
    parser.add_argument("--samples", type=int, default=8, help="generations per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--micro-batch", type=int, default=16, help="rows per forward/backward")
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--tasks", default=None, help="math-1agent's tasks= as JSON")
    parser.add_argument("--trl-loss-type", default=None, help="TRL's loss_type (default: TRL's)")
    parser.add_argument("--trl-gradient-checkpointing", action="store_true",
                        help="TRL's default (on); off by default here, as in flexmg's learner")  # fmt: skip
    parser.add_argument("--phrasing-prompts", type=int, default=0,
                        help="--evaluate: also this many prompts in unseen phrasings")  # fmt: skip
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    device = resolve_device(args.device)
    if args.evaluate is not None:
        try:
            evaluate(args.evaluate, args.prompts or 300, args.phrasing_prompts, device)
        except FileNotFoundError as exc:
            parser.error(str(exc))
        return 0
    from flexmg.models.names import model_problem

    problem = model_problem(args.model)
    if problem:
        parser.error(problem)
    try:
        budget = Budget(
            model=args.model, steps=args.steps, prompts=args.prompts or 8, samples=args.samples,
            max_new_tokens=args.max_new_tokens, lr=args.lr, micro_batch=args.micro_batch,
            seed=args.seed, device=device, tasks=tasks_option(args.tasks),
        )  # fmt: skip
    except ValueError as exc:
        parser.error(str(exc))
    if (args.out / ADAPTER).exists() or (args.out / RUN).exists():
        parser.error(f"{args.out} already holds a run ({ADAPTER}/ or {RUN}); choose another --out")
    trl: dict[str, Any] = {"loss_type": args.trl_loss_type} if args.trl_loss_type else {}
    if args.trl_gradient_checkpointing:
        trl["gradient_checkpointing"] = True
    record = train(budget, args.out, trl)
    per_step = record["step_seconds"]
    print(f"trained {len(per_step)} steps in {record['train_seconds']:.1f} s "
          f"({sum(per_step) / max(1, len(per_step)):.1f} s per step); rewards "
          + ", ".join(f"{r:.3f}" for r in record["reward"]))  # fmt: skip
    print(f"written: {args.out / ADAPTER}/ (peft layout), {args.out / RUN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
