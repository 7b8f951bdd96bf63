"""Do flexmg's rollouts and TRL's ``GRPOTrainer`` rollouts come from the same distribution?

``update_equivalence.py`` showed that on the same completions the two learners make
the same update, so the equal-budget gap (docs/equal_budget.md) would have to come
from the rollouts. This script checks the rollout itself at the shared start: the
same model with the same LoRA start (flexmg's initial adapter copied into TRL's peft
model), the same prompts (the first ``--steps`` steps of the equal budget), and

* flexmg: ``Trainer.rollout`` — what ``flexmg train --algo group --env math-1agent``
  plays (its prompt encoder, its KV-cached sampler, the env's score as reward);
* TRL: ``GRPOTrainer._generate_and_score_completions`` — what TRL's training step
  runs (its chat templating and tokenization, ``transformers.generate`` with the
  trainer's own generation config, its EOS masking, the same env-score reward).

Checked: that both sides tokenize every prompt to the same ids, and that TRL's
generation config resolves to plain temperature sampling (no logits processors);
compared, paired by prompt with 95% bootstrap intervals: mean reward, correct rate,
completion length, the share cut at the token limit, and the mean per-token log-prob
of the completions under the shared start policy, scored for both sides by flexmg's
learner (``TeamPolicy.evaluate``: a distribution that samples differently shows here
first). If the two are one distribution, every difference's interval spans zero. Also
printed: the largest gap between the log-prob flexmg's sampler drew each token with and
the learner's score of it (what PPO's ratio compares).

Usage::

    python benchmarks/rollout_equivalence.py --steps 4 --seed 0 --json rollout_equivalence.json
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from equal_budget import (  # the benchmarks folder is on sys.path (the script's own folder)
    ENV,
    Budget,
    env_reward,
    grpo_config,
    load,
    lora_config,
    train_config,
    trl_rows,
)
from update_equivalence import ROLE, flexmg_weights, lora_key

FIGURES = ("reward", "correct", "tokens", "truncated", "token_logprob")


def mean(xs: Sequence[float]) -> float:
    """The mean (nan for nothing)."""
    return sum(xs) / len(xs) if xs else math.nan


def paired_interval(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """Mean of ``a - b`` over paired prompts and its 95% bootstrap interval (prompts resampled).

    The interval is :func:`flexmg.metrics.per_prompt_ci` of the per-prompt differences.

    >>> paired_interval([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    (0.0, 0.0, 0.0)
    """
    from flexmg.metrics import per_prompt_ci

    diffs = [x - y for x, y in zip(a, b, strict=True)]
    ci = per_prompt_ci(diffs) or [mean(diffs), mean(diffs)]
    return mean(diffs), ci[0], ci[1]


def per_prompt(rows: Sequence[dict[str, Any]], group: int) -> dict[str, list[float]]:
    """Each figure's mean over each prompt's ``group`` consecutive completions."""
    out: dict[str, list[float]] = {f: [] for f in FIGURES}
    for start in range(0, len(rows), group):
        chunk = rows[start : start + group]
        for f in FIGURES:
            out[f].append(mean([float(r[f]) for r in chunk]))
    return out


def learner_logprobs(policy: Any, rows: Sequence[dict[str, Any]], micro: int) -> list[list[float]]:
    """Per-token log-probs of each row's completion as flexmg's learner scores them.

    :meth:`~flexmg.agents.policy.TeamPolicy.evaluate` of the solver (the start
    policy, before any update): one scorer for both sides' completions.
    """
    import torch

    out: list[list[float]] = []
    with torch.no_grad():
        for start in range(0, len(rows), micro):
            part = rows[start : start + micro]
            ev = policy.evaluate(
                ROLE, [r["prompt_ids"] for r in part], [r["completion_ids"] for r in part],
                with_entropy=False, token_values=False,
            )  # fmt: skip
            for i, r in enumerate(part):
                out.append(ev.token_logprobs[i, : len(r["completion_ids"])].tolist())
    return out


def flexmg_side(trainer: Any, budget: Budget) -> list[dict[str, Any]]:
    """Completions of ``Trainer.rollout`` for the budget's first ``steps`` steps (no learning)."""
    import flexmg

    vec = flexmg.make_vec(ENV, num_envs=budget.batch, **{**budget.env_kwargs, "split": "train"})
    rows = []
    try:
        for step in range(budget.steps):
            for s in trainer.rollout(vec, step).samples:
                rows.append({
                    "prompt_ids": list(s.prompt_ids), "completion_ids": list(s.action_ids),
                    "reward": float(s.team_reward), "correct": float(s.team_reward) > 0.5,
                    "tokens": len(s.action_ids), "truncated": bool(s.truncated),
                    "sampler_logprobs": list(s.sampler_logprobs),
                })  # fmt: skip
    finally:
        vec.close()
    return rows


class TRLRollout:
    """A real ``GRPOTrainer`` of the budget, used only for its generate-and-score step."""

    def __init__(self, budget: Budget, scratch: str, start: dict[str, Any]) -> None:
        import torch
        from datasets import Dataset
        from trl import GRPOTrainer

        model, tokenizer = load(budget)
        self.budget, self.tokenizer = budget, tokenizer
        self.rewards: list[float] = []
        reward = env_reward(budget)

        def recorded(completions: Sequence[Any], **kw: Any) -> list[float]:
            r = reward(completions, **kw)
            self.rewards.extend(r)
            return r

        recorded.__name__ = "flexmg_reward"
        chat = bool(getattr(tokenizer, "chat_template", None))
        self.rows = trl_rows(budget, chat)
        self.trainer = GRPOTrainer(
            model=model, processing_class=tokenizer, reward_funcs=recorded,
            args=grpo_config(budget, scratch), train_dataset=Dataset.from_list(self.rows),
            peft_config=lora_config(budget),
        )  # fmt: skip
        params = {lora_key(n): p for n, p in self.trainer.model.named_parameters() if "lora_" in n}
        if set(params) != set(start):
            raise RuntimeError(
                f"TRL's LoRA parameters do not match flexmg's ({len(params)} vs {len(start)})"
            )
        with torch.no_grad():
            for k, p in params.items():
                p.copy_(start[k])

    def processors(self) -> list[str]:
        """The logits processors ``transformers.generate`` builds from TRL's generation config."""
        model = self.trainer.model
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        config, _ = base._prepare_generation_config(self.trainer.generation_config)
        procs = base._get_logits_processor(
            generation_config=config, input_ids_seq_length=1, encoder_input_ids=None,
            prefix_allowed_tokens_fn=None, logits_processor=None,
        )  # fmt: skip
        return [type(p).__name__ for p in procs]

    def step(self, step: int) -> list[dict[str, Any]]:
        """TRL's generate-and-score on step ``step``'s prompts (each ``samples`` times in a row)."""
        b = self.budget
        inputs = [dict(self.rows[step * b.prompts + i // b.samples]) for i in range(b.batch)]
        self.rewards.clear()
        self.trainer.model.train()  # as in TRL's training step
        out = self.trainer._generate_and_score_completions(inputs)
        rows = []
        for i in range(b.batch):
            p = out["prompt_ids"][i][out["prompt_mask"][i].bool()].tolist()
            c = out["completion_ids"][i][out["completion_mask"][i].bool()].tolist()
            eos = bool(c) and c[-1] in self.trainer.eos_token_ids
            rows.append({
                "prompt_ids": p, "completion_ids": c, "reward": self.rewards[i],
                "correct": self.rewards[i] > 0.5, "tokens": len(c), "truncated": not eos,
            })  # fmt: skip
        return rows


def run(budget: Budget, out: Path | None) -> dict[str, Any]:
    import torch

    from flexmg.agents.trainer import Trainer

    with tempfile.TemporaryDirectory(prefix="rollout-eq-") as scratch:
        trainer = Trainer(train_config(budget, "group", Path(scratch) / "flexmg"))
        start = flexmg_weights(trainer)
        flex = flexmg_side(trainer, budget)
        trl = TRLRollout(budget, str(Path(scratch) / "trl"), start)
        processors = trl.processors()
        torch.manual_seed(budget.seed)
        theirs = [row for step in range(budget.steps) for row in trl.step(step)]
        for rows in (flex, theirs):
            for row, lps in zip(rows, learner_logprobs(trainer.policy, rows, budget.micro_batch),
                                strict=True):  # fmt: skip
                row["token_logprob"] = mean(lps)
                if "sampler_logprobs" in row:  # what flexmg's sampler drew against the learner
                    row["sampler_gap"] = max(
                        (abs(x - y) for x, y in zip(lps, row.pop("sampler_logprobs"), strict=True)),
                        default=0.0,
                    )  # fmt: skip
    same_prompts = all(
        a["prompt_ids"] == b["prompt_ids"] for a, b in zip(flex, theirs, strict=True)
    )
    a, b = per_prompt(flex, budget.samples), per_prompt(theirs, budget.samples)
    figures = {}
    for f in FIGURES:
        diff, lo, hi = paired_interval(a[f], b[f])
        figures[f] = {"flexmg": mean(a[f]), "trl": mean(b[f]), "difference": diff, "ci": [lo, hi]}
    result = {
        "budget": budget.to_dict(), "env": ENV, "prompts": len(a["reward"]),
        "completions_per_side": len(flex), "same_prompt_ids": same_prompts,
        "trl_logits_processors": processors, "figures": figures,
        "sampler_vs_learner_max_abs_logprob": max(r["sampler_gap"] for r in flex),
        "examples": {"flexmg": [trl.tokenizer.decode(r["completion_ids"]) for r in flex[:3]],
                     "trl": [trl.tokenizer.decode(r["completion_ids"]) for r in theirs[:3]]},
    }  # fmt: skip
    if out is not None:
        from flexmg.io import atomic_write_json

        atomic_write_json(out, result, indent=2)
    return result


def table(result: dict[str, Any]) -> str:
    """The figures as a Markdown table."""
    lines = ["| figure (mean per completion) | flexmg | TRL | flexmg - TRL, paired by prompt [95% CI] |",
             "|---|---|---|---|"]  # fmt: skip
    for f, v in result["figures"].items():
        lo, hi = v["ci"]
        lines.append(
            f"| {f} | {v['flexmg']:.3f} | {v['trl']:.3f} | {v['difference']:+.3f} [{lo:+.3f}, {hi:+.3f}] |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="a zoo name, folder or HF id")
    parser.add_argument(
        "--steps", type=int, default=4, help="steps of prompts (each --prompts x --samples)"
    )
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--micro-batch", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    from flexmg.models.names import model_problem

    problem = model_problem(args.model)
    if problem:
        parser.error(problem)
    budget = Budget(
        model=args.model, steps=args.steps, prompts=args.prompts, samples=args.samples,
        max_new_tokens=args.max_new_tokens, micro_batch=args.micro_batch, seed=args.seed,
    )  # fmt: skip
    result = run(budget, args.json)
    print(f"{result['prompts']} prompts x {args.samples} completions per side; "
          f"same prompt ids: {result['same_prompt_ids']}; "
          f"TRL's logits processors: {result['trl_logits_processors'] or 'none'}; "
          f"flexmg's sampler vs learner log-probs, max |diff| "
          f"{result['sampler_vs_learner_max_abs_logprob']:.2e}")  # fmt: skip
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
