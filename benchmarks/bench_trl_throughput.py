"""Rollout tokens/s, seconds per update and peak memory: flexmg's learner next to TRL's GRPOTrainer.

Both sides get the same budget (``equal_budget.py``): the same model, the same
prompts (``math-1agent``'s train split, the seeds ``flexmg train`` plays, flexmg's
chat prompt), the same reward (the env's score of the completion), ``--prompts`` x
``--samples`` completions of at most ``--max-new-tokens`` tokens per step at
temperature 1.0 (no top-k/top-p), LoRA r16 a32 on the seven projections, lr 2e-4,
micro-batches of ``--micro-batch``, ``--steps`` steps. Each side runs in a fresh
child process, one after the other:

* **flexmg**: ``Trainer.train_step`` as ``flexmg train`` calls it (``--algo``, default
  ``marft``, the main job's learner; ``group`` is the critic-free one): the rollout
  samples every episode of the role's turn in one batch with flexmg's KV-cached
  decoder (``flexmg.models.sampling``), then one PPO update;
* **TRL**: ``GRPOTrainer.train()`` for the same number of steps (transformers'
  ``generate`` with its KV cache, then the GRPO loss; no reference model).

Figures, each side in its own process:

* ``rollout_tokens_per_s``: generated tokens / seconds inside generation (flexmg's
  ``Decoder.generate``, TRL's ``_generate``). A completion's tokens are counted up to
  and including its stop token, at most ``--max-new-tokens`` (flexmg's ``action_ids``,
  TRL's masked ``completion_ids``: the same rule);
* ``rollout_s`` per step (flexmg: ``collect_rollout``, generation + env grading +
  critic features; TRL: ``_generate_and_score_completions``), ``update_s`` per step
  (the rest of the step: flexmg's ``PPOLearner.update``; TRL's loss, backward and
  optimizer step) and ``step_s``;
* ``peak_rss_mb``: the process's RSS high-water mark (``getrusage`` ``ru_maxrss``),
  and ``rss_after_load_mb`` (the same mark once the model is loaded); on a GPU also
  ``peak_gpu_mb`` (``torch.cuda.max_memory_allocated``).

The ratios flexmg / TRL of each figure are printed and written with ``--json``.
The first step of either side includes one-off costs; ``--skip-first`` leaves it out
of the means when ``--steps`` >= 2. Both sides check that they played the same prompts.

Usage::

    python benchmarks/bench_trl_throughput.py                      # SmolLM2, 2 steps of 8 x 8
    python benchmarks/bench_trl_throughput.py --steps 3 --skip-first --json trl_tput.json
    python benchmarks/bench_trl_throughput.py --device cuda         # on a GPU
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from equal_budget import (  # the benchmarks folder is on sys.path (the script's own folder)
    Budget,
    env_reward,
    grpo_config,
    load,
    lora_config,
    peak_gpu_mb,
    peak_rss_mb,
    prompt_seeds,
    resolve_device,
    tasks_option,
    train_config,
    trl_rows,
)
from flexmg.io import atomic_write_json

SIDES = ("flexmg", "trl")
FIGURES = ("rollout_tokens_per_s", "rollout_s", "update_s", "step_s", "peak_rss_mb")


class Clock:
    """Wraps a callable; adds the seconds spent in it (synchronizing CUDA) and what it counts."""

    def __init__(self, fn: Callable[..., Any], count: Callable[[Any], int], cuda: bool) -> None:
        self.fn, self.count, self.cuda = fn, count, cuda
        self.seconds, self.items, self.calls = 0.0, 0, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._sync()
        t0 = time.perf_counter()
        out = self.fn(*args, **kwargs)
        self._sync()
        self.seconds += time.perf_counter() - t0
        self.items += self.count(out)
        self.calls += 1
        return out

    def _sync(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()

    def take(self) -> tuple[float, int]:
        """Seconds and items since the last take."""
        out = (self.seconds, self.items)
        self.seconds, self.items = 0.0, 0
        return out


# ----------------------------------------------------------------------------- the two sides
def flexmg_side(budget: Budget, algo: str, workdir: Path) -> dict[str, Any]:
    """``--steps`` of ``Trainer.train_step`` (rollout + update) with timers around its parts."""
    import torch

    import flexmg
    from flexmg.agents.trainer import Trainer

    t0 = time.perf_counter()
    trainer = Trainer(train_config(budget, algo, workdir / "flexmg-run"))
    load_s = time.perf_counter() - t0
    rss_loaded = peak_rss_mb()
    cuda = trainer.policy.device.type == "cuda"
    decoder = trainer.policy.decoder
    generate = Clock(decoder.generate, lambda out: sum(len(a) for a in out[0].action_ids), cuda)
    decoder.generate = generate  # type: ignore[method-assign]
    update = Clock(trainer.learner.update, lambda out: 0, cuda)
    trainer.learner.update = update  # type: ignore[method-assign]
    cfg = trainer.config
    vec = flexmg.make_vec(cfg.env, num_envs=cfg.episodes_per_update,
                          **{**cfg.env_kwargs, "split": "train"})  # fmt: skip
    steps = []
    try:
        for step in range(budget.steps):
            start = time.perf_counter()
            batch, stats = trainer.train_step(vec, step)
            if cuda:
                torch.cuda.synchronize()
            step_s = time.perf_counter() - start
            gen_s, tokens = generate.take()
            update_s, _ = update.take()
            steps.append({
                "step_s": step_s, "update_s": update_s, "rollout_s": step_s - update_s,
                "generate_s": gen_s, "generated_tokens": tokens,
                "completions": len(batch.samples), "reward": batch.mean_team_reward,
                "prompt_seeds": list(dict.fromkeys(trainer.rollout_seeds(step))),
                "prompt_tokens": sum(len(s.prompt_ids) for s in batch.samples),
            })  # fmt: skip
    finally:
        vec.close()
    return {"side": "flexmg", "algo": algo, "load_s": load_s, "rss_after_load_mb": rss_loaded,
            "steps": steps}  # fmt: skip


def trl_side(budget: Budget, workdir: Path, overrides: dict[str, Any]) -> dict[str, Any]:
    """``GRPOTrainer.train()`` for ``--steps`` steps with timers around generation and scoring."""
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    t0 = time.perf_counter()
    torch.manual_seed(budget.seed)
    model, tokenizer = load(budget)
    chat = bool(getattr(tokenizer, "chat_template", None))
    reward = env_reward(budget)
    trainer = GRPOTrainer(
        model=model, processing_class=tokenizer, reward_funcs=reward,
        args=grpo_config(budget, workdir / "trl-run", **overrides),
        train_dataset=Dataset.from_list(trl_rows(budget, chat)), peft_config=lora_config(budget),
    )  # fmt: skip
    load_s = time.perf_counter() - t0
    rss_loaded = peak_rss_mb()
    cuda = next(trainer.model.parameters()).device.type == "cuda"
    generate = Clock(trainer._generate, lambda out: sum(len(c) for c in out[1]), cuda)
    trainer._generate = generate  # type: ignore[method-assign]
    prompt_tokens: list[int] = []  # tokens of the prompts TRL tokenized since the last step
    rollout = Clock(trainer._generate_and_score_completions, lambda out: 0, cuda)
    trainer._generate_and_score_completions = rollout  # type: ignore[method-assign]
    tokenize = trainer._tokenize_prompts

    def counted_tokenize(prompts: list) -> Any:
        out = tokenize(prompts)
        prompt_tokens.append(sum(len(p) for p in out[0]))
        return out

    trainer._tokenize_prompts = counted_tokenize  # type: ignore[method-assign]
    steps: list[dict[str, Any]] = []

    class StepTimes(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.start = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if cuda:
                torch.cuda.synchronize()
            step_s = time.perf_counter() - self.start
            gen_s, tokens = generate.take()
            rollout_s, _ = rollout.take()
            calls = reward.calls[-1] if reward.calls else []  # type: ignore[attr-defined]
            steps.append({
                "step_s": step_s, "rollout_s": rollout_s, "update_s": step_s - rollout_s,
                "generate_s": gen_s, "generated_tokens": tokens, "completions": len(calls),
                "prompt_seeds": list(dict.fromkeys(calls)),
                "prompt_tokens": sum(prompt_tokens),
            })  # fmt: skip
            prompt_tokens.clear()

    trainer.add_callback(StepTimes())
    trainer.train()
    rewards = [e["rewards/flexmg_reward/mean"] for e in trainer.state.log_history
               if "rewards/flexmg_reward/mean" in e]  # fmt: skip
    for row, r in zip(steps, rewards):
        row["reward"] = r
    return {"side": "trl", "loss_type": trainer.loss_type, "load_s": load_s,
            "gradient_checkpointing": bool(trainer.args.gradient_checkpointing),
            "rss_after_load_mb": rss_loaded, "steps": steps}  # fmt: skip


def child(side: str, budget: Budget, algo: str, trl: dict[str, Any], threads: int) -> dict:
    """One side in this process: its figures and this process's peak memory."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(budget.seed)
    with tempfile.TemporaryDirectory(prefix=f"bench-trl-{side}-") as tmp:
        if side == "flexmg":
            result = flexmg_side(budget, algo, Path(tmp))
        else:
            result = trl_side(budget, Path(tmp), trl)
    result["peak_rss_mb"] = peak_rss_mb()
    gpu = peak_gpu_mb()
    if gpu is not None:
        result["peak_gpu_mb"] = gpu
    result["threads"] = torch.get_num_threads()
    return result


def run_child(side: str, budget: Budget, algo: str, trl: dict[str, Any], threads: int) -> dict:
    """Run :func:`child` in a fresh Python process; its result (the last line it prints)."""
    spec = json.dumps({"side": side, "budget": budget.to_dict(), "algo": algo,
                       "trl": trl, "threads": threads})  # fmt: skip
    env = {**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run([sys.executable, __file__, "--child", spec], capture_output=True,
                          text=True, env=env)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"the {side} side failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- the report
def summarize(result: dict[str, Any], skip_first: bool) -> dict[str, Any]:
    """Means over the measured steps of one side (the first left out when asked and possible)."""
    steps = result["steps"]
    measured = steps[1:] if skip_first and len(steps) > 1 else steps
    if not measured:
        raise RuntimeError(f"the {result['side']} side recorded no step")
    mean = lambda key: sum(float(s[key]) for s in measured) / len(measured)  # noqa: E731
    gen_s = sum(float(s["generate_s"]) for s in measured)
    tokens = sum(int(s["generated_tokens"]) for s in measured)
    out = {
        "steps_measured": len(measured),
        "rollout_tokens_per_s": tokens / gen_s if gen_s > 0 else 0.0,
        "generated_tokens_per_step": tokens / len(measured),
        "completions_per_step": mean("completions"),
        "prompt_tokens_per_step": mean("prompt_tokens"),
        "rollout_s": mean("rollout_s"),
        "update_s": mean("update_s"),
        "step_s": mean("step_s"),
        "peak_rss_mb": float(result["peak_rss_mb"]),
        "rss_after_load_mb": float(result["rss_after_load_mb"]),
        "mean_reward": sum(float(s.get("reward", 0.0)) for s in steps) / len(steps),
    }
    if "peak_gpu_mb" in result:
        out["peak_gpu_mb"] = float(result["peak_gpu_mb"])
    return out


def ratios(flexmg: dict[str, Any], trl: dict[str, Any]) -> dict[str, float | None]:
    """flexmg / TRL of each figure (tokens/s: higher is better; seconds, memory: lower is)."""
    keys = [
        *FIGURES,
        *(["peak_gpu_mb"] if "peak_gpu_mb" in flexmg and "peak_gpu_mb" in trl else []),
    ]
    return {k: (flexmg[k] / trl[k] if trl[k] else None) for k in keys}


def format_report(summary: dict[str, Any]) -> str:
    """The table the benchmark prints."""
    b = summary["budget"]
    lines = [
        f"{b['model']} on {summary['device']}: {b['prompts']} prompts x {b['samples']} samples, "
        f"<= {b['max_new_tokens']} new tokens, {summary['steps_measured']} measured step(s) of "
        f"{b['steps']}; flexmg --algo {summary['algo']}; TRL loss {summary['trl_loss_type']}, "
        f"gradient checkpointing {'on' if summary['trl_gradient_checkpointing'] else 'off'}; "
        f"same prompts: {summary['same_prompts']}",
        f"{'figure':<24}{'flexmg':>12}{'TRL':>12}{'flexmg/TRL':>12}",
    ]
    labels = {"rollout_tokens_per_s": "rollout tokens/s", "rollout_s": "rollout s/step",
              "update_s": "update s/step", "step_s": "step s", "peak_rss_mb": "peak RSS MiB",
              "peak_gpu_mb": "peak GPU MiB"}  # fmt: skip
    f, t = summary["flexmg"], summary["trl"]
    for key, ratio in summary["ratio"].items():
        shown = "n/a" if ratio is None else f"{ratio:.2f}x"
        lines.append(f"{labels[key]:<24}{f[key]:>12.2f}{t[key]:>12.2f}{shown:>12}")
    lines.append(f"{'generated tokens/step':<24}{f['generated_tokens_per_step']:>12.1f}"
                 f"{t['generated_tokens_per_step']:>12.1f}")  # fmt: skip
    lines.append(f"{'prompt tokens/step':<24}{f['prompt_tokens_per_step']:>12.1f}"
                 f"{t['prompt_tokens_per_step']:>12.1f}")  # fmt: skip
    lines.append(f"{'mean reward':<24}{f['mean_reward']:>12.3f}{t['mean_reward']:>12.3f}")
    lines.append("memory: each side's own process, RSS high-water mark (getrusage ru_maxrss)")
    return "\n".join(lines)


def compare(budget: Budget, algo: str = "marft", trl: dict[str, Any] | None = None,
            threads: int = 0, skip_first: bool = False) -> dict[str, Any]:  # fmt: skip
    """Both sides, one after the other, each in a fresh process; the summary with ratios."""
    raw = {side: run_child(side, budget, algo, dict(trl or {}), threads) for side in SIDES}
    sums = {side: summarize(raw[side], skip_first) for side in SIDES}
    same = [s["prompt_seeds"] for s in raw["flexmg"]["steps"]] == [
        s["prompt_seeds"] for s in raw["trl"]["steps"]
    ]
    expected = [prompt_seeds(budget, k) for k in range(budget.steps)]
    return {
        "budget": budget.to_dict(), "device": budget.device, "algo": algo,
        "trl_loss_type": raw["trl"].get("loss_type"),
        "trl_gradient_checkpointing": raw["trl"].get("gradient_checkpointing"),
        "same_prompts": same and [s["prompt_seeds"] for s in raw["trl"]["steps"]] == expected,
        "steps_measured": sums["flexmg"]["steps_measured"], "threads": raw["flexmg"]["threads"],
        "flexmg": sums["flexmg"], "trl": sums["trl"], "ratio": ratios(sums["flexmg"], sums["trl"]),
        "raw": raw,
    }  # fmt: skip


def trl_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The GRPOConfig settings the command line changes from the equal budget's."""
    out: dict[str, Any] = {}
    if args.trl_loss_type:
        out["loss_type"] = args.trl_loss_type
    if args.trl_gradient_checkpointing:
        out["gradient_checkpointing"] = True
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="a zoo name, folder or HF id")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=8, help="distinct prompts per step")
    parser.add_argument("--samples", type=int, default=8, help="samples per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--micro-batch", type=int, default=16, help="rows per forward/backward")
    parser.add_argument("--tasks", default=None, help="math-1agent's tasks= as JSON")
    parser.add_argument("--algo", default="marft", help="flexmg's learner (marft, group, ...)")
    parser.add_argument("--trl-loss-type", default=None, help="TRL's loss_type (default: TRL's)")
    parser.add_argument("--trl-gradient-checkpointing", action="store_true",
                        help="TRL's default (on); off by default here, as in flexmg's learner")  # fmt: skip
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's)")
    parser.add_argument("--skip-first", action="store_true", help="leave step 1 out of the means")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        spec = json.loads(args.child)
        result = child(spec["side"], Budget.from_dict(spec["budget"]), spec["algo"],
                       spec["trl"], spec["threads"])  # fmt: skip
        print(json.dumps(result))
        return 0
    from flexmg.models.names import model_problem

    problem = model_problem(args.model)
    if problem:
        parser.error(problem)
    try:
        budget = Budget(
            model=args.model, steps=args.steps, prompts=args.prompts, samples=args.samples,
            max_new_tokens=args.max_new_tokens, micro_batch=args.micro_batch, seed=args.seed,
            device=resolve_device(args.device), dtype=args.dtype,
            tasks=tasks_option(args.tasks),
        )  # fmt: skip
    except ValueError as exc:
        parser.error(str(exc))
    summary = compare(budget, args.algo, trl_overrides(args), args.threads, args.skip_first)
    print(format_report(summary))
    if args.json is not None:
        atomic_write_json(args.json, summary, indent=2)
        print(f"written: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
