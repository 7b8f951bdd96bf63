"""Does flexmg's learner make the same update as TRL's ``GRPOTrainer`` when both see the same batch?

The equal-budget runs (docs/equal_budget.md) found TRL's GRPO ahead of flexmg's
single agent after 20 steps. Before blaming the loss, this script checks whether
the two *updates* differ at all. Both sides start from the same LoRA weights
(flexmg's initial adapter is copied into TRL's peft model), and at each step:

1. flexmg plays the step's batch (``Trainer.rollout``: the prompts, samples and
   rewards of ``flexmg train --algo group`` on ``math-1agent``, the equal budget);
2. flexmg's learner takes its update on it (``Trainer.learn``: group advantages,
   the clipped token-level loss, grad clip, Adam);
3. TRL's trainer takes its update on the *same* completions: its own advantage
   formula over the same rewards, its own ``training_step`` (``compute_loss`` with
   its default loss, its gradient-accumulation scaling), its ``max_grad_norm`` clip
   and its own optimizer (``create_optimizer``). Only TRL's generation is bypassed.

Printed per step: the cosine and norm ratio of the two gradients (before clipping)
and of the two weight changes since the start, and how far apart the two adapters
are relative to how far they moved. The noise floor: TRL's gradient of the same batch
in micro-batches of half the size (only the float sums are reordered) against its own. The rollout always comes from flexmg's adapter,
so after step 1 TRL's adapter learns from completions of a policy a little away
from its own (its loss then treats them as on-policy, as it does with its own).

Usage::

    python benchmarks/update_equivalence.py --steps 3 --seed 0 --json update_equivalence.json
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from equal_budget import (  # the benchmarks folder is on sys.path (the script's own folder)
    ENV,
    Budget,
    grpo_config,
    load,
    lora_config,
    train_config,
    trl_rows,
)

ROLE = "solver"


def lora_key(name: str) -> str:
    """A LoRA parameter's name without peft's prefixes and adapter name.

    >>> lora_key("base_model.model.model.layers.0.self_attn.q_proj.lora_A.solver.weight")
    'model.layers.0.self_attn.q_proj.lora_A.weight'
    >>> lora_key("base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight")
    'model.layers.0.self_attn.q_proj.lora_A.weight'
    """
    name = re.sub(r"^(base_model\.model\.)+", "", name)
    return re.sub(r"\.(lora_[AB])\.[^.]+\.", r".\1.", name)


def trl_advantages(rewards: Sequence[float], group: int) -> list[float]:
    """TRL's default advantages: reward minus its group's mean, over the group's std + 1e-4.

    The std is torch's (Bessel-corrected), as in ``GRPOTrainer`` with ``scale_rewards="group"``.

    >>> [round(a, 3) for a in trl_advantages([1.0, 0.0, 0.0, 0.0], 4)]
    [1.5, -0.5, -0.5, -0.5]
    """
    out: list[float] = []
    for start in range(0, len(rewards), group):
        chunk = list(rewards[start : start + group])
        mean = sum(chunk) / len(chunk)
        std = math.sqrt(sum((r - mean) ** 2 for r in chunk) / max(1, len(chunk) - 1))
        out.extend((r - mean) / (std + 1e-4) for r in chunk)
    return out


def _flat(tensors: Sequence[Any]) -> Any:
    import torch

    return torch.cat([t.detach().reshape(-1).double() for t in tensors])


def compare(a: Any, b: Any) -> dict[str, float]:
    """Cosine, norm ratio ``|a| / |b|`` and relative distance ``|a - b| / |b|`` of two flat vectors."""
    import torch

    na, nb = float(a.norm()), float(b.norm())
    cos = float(torch.nn.functional.cosine_similarity(a, b, dim=0)) if na and nb else float("nan")
    return {"cosine": cos, "norm_ratio": na / nb if nb else float("nan"),
            "rel_distance": float((a - b).norm()) / nb if nb else float("nan")}  # fmt: skip


def trl_inputs(samples: Sequence[Any], advantages: Sequence[float], pad_id: int) -> dict[str, Any]:
    """One TRL micro-batch: left-padded prompts, right-padded completions, masks, advantages."""
    import torch

    p_len = max(len(s.prompt_ids) for s in samples)
    c_len = max(max(len(s.action_ids) for s in samples), 1)
    prompt_ids = torch.full((len(samples), p_len), pad_id, dtype=torch.long)
    prompt_mask = torch.zeros((len(samples), p_len), dtype=torch.long)
    completion_ids = torch.full((len(samples), c_len), pad_id, dtype=torch.long)
    completion_mask = torch.zeros((len(samples), c_len), dtype=torch.long)
    for i, s in enumerate(samples):
        p, c = list(s.prompt_ids), list(s.action_ids)
        prompt_ids[i, p_len - len(p) :] = torch.tensor(p)
        prompt_mask[i, p_len - len(p) :] = 1
        if c:
            completion_ids[i, : len(c)] = torch.tensor(c)
            completion_mask[i, : len(c)] = 1
    return {"prompt_ids": prompt_ids, "prompt_mask": prompt_mask,
            "completion_ids": completion_ids, "completion_mask": completion_mask,
            "advantages": torch.tensor(list(advantages), dtype=torch.float32)}  # fmt: skip


class TRLSide:
    """TRL's ``GRPOTrainer`` of the budget, stepped on given completions."""

    def __init__(self, budget: Budget, scratch: str, start: dict[str, Any]) -> None:
        import torch
        from datasets import Dataset
        from trl import GRPOTrainer

        model, tokenizer = load(budget)
        self.budget, self.tokenizer = budget, tokenizer
        chat = bool(getattr(tokenizer, "chat_template", None))
        self.trainer = GRPOTrainer(
            model=model, processing_class=tokenizer,
            reward_funcs=lambda completions, **_: [0.0] * len(completions),
            args=grpo_config(budget, scratch), train_dataset=Dataset.from_list(trl_rows(budget, chat)),
            peft_config=lora_config(budget),
        )  # fmt: skip
        self.params = {lora_key(n): p for n, p in self.trainer.model.named_parameters()
                       if "lora_" in n}  # fmt: skip
        if set(self.params) != set(start):
            raise RuntimeError(
                f"TRL's LoRA parameters ({len(self.params)}) do not match flexmg's "
                f"({len(start)}): e.g. {sorted(set(self.params) ^ set(start))[:3]}"
            )
        with torch.no_grad():
            for k, p in self.params.items():
                p.copy_(start[k])
        self.trainer.create_optimizer()
        # the completions are given: TRL's generation step is bypassed
        self.trainer._prepare_inputs = lambda batch: batch  # type: ignore[method-assign]

    def gradient(self, samples: Sequence[Any], advantages: Sequence[float], micro: int) -> Any:
        """TRL's accumulated gradient on ``samples`` in micro-batches of ``micro`` (flat)."""
        import torch

        trainer = self.trainer
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        n_items = torch.tensor(float(sum(len(s.action_ids) for s in samples)))
        trainer.current_gradient_accumulation_steps = -(-len(samples) // micro)
        trainer.model.train()
        trainer.optimizer.zero_grad(set_to_none=True)
        for start in range(0, len(samples), micro):
            part = slice(start, start + micro)
            inputs = trl_inputs(samples[part], advantages[part], pad)
            inputs["num_items_in_batch"] = n_items
            trainer.training_step(trainer.model, inputs, n_items)
        return _flat([self.params[k].grad for k in sorted(self.params)])

    def step(self, samples: Sequence[Any], advantages: Sequence[float]) -> tuple[Any, Any]:
        """One optimizer step on ``samples``.

        Returns the gradient before clipping and, as the numerical noise floor, the
        gradient of the same batch in micro-batches half the size (no step taken on it).
        """
        import torch

        trainer, micro = self.trainer, self.budget.micro_batch
        floor = self.gradient(samples, advantages, max(1, micro // 2))
        grad = self.gradient(samples, advantages, micro)
        keys = sorted(self.params)
        torch.nn.utils.clip_grad_norm_([self.params[k] for k in keys], trainer.args.max_grad_norm)
        trainer.optimizer.step()
        trainer.optimizer.zero_grad(set_to_none=True)
        return grad, floor

    def weights(self) -> dict[str, Any]:
        return {k: p.detach().clone() for k, p in self.params.items()}


def policy_key(name: str) -> str:
    """:func:`lora_key` of a ``TeamPolicy`` parameter (its peft model sits in ``model``)."""
    return lora_key(name.removeprefix("model."))


def flexmg_weights(trainer: Any) -> dict[str, Any]:
    """flexmg's solver adapter, keyed like TRL's (:func:`lora_key`)."""
    adapter = trainer.policy.adapter_name(ROLE)
    out = {}
    for name, p in trainer.policy.named_parameters():
        if "lora_" in name and f".{adapter}." in name:
            out[policy_key(name)] = p.detach().clone()
    return out


def capture_grads(trainer: Any, keys: Sequence[str]) -> tuple[list[Any], Any]:
    """Record the solver's gradient before clipping at each flexmg step.

    Returns the list the gradients are appended to and a function that undoes the wrap.
    """
    import torch

    learner = trainer.learner
    name = trainer.policy.adapter_name(ROLE)
    params = learner.actor_params[name]
    by_id = {}
    for pname, p in trainer.policy.named_parameters():
        by_id[id(p)] = policy_key(pname)
    order = [by_id[id(p)] for p in params]
    seen: list[Any] = []
    clip = torch.nn.utils.clip_grad_norm_

    def recording_clip(ps: Any, max_norm: float, *a: Any, **kw: Any) -> Any:
        ps = list(ps)
        if ps and ps[0] is params[0]:
            grads = dict(zip(order, (p.grad for p in ps), strict=True))
            seen.append(_flat([grads[k] for k in keys]))
        return clip(ps, max_norm, *a, **kw)

    def restore() -> None:
        torch.nn.utils.clip_grad_norm_ = clip

    torch.nn.utils.clip_grad_norm_ = recording_clip
    return seen, restore


def run(budget: Budget, out: Path | None) -> dict[str, Any]:
    import flexmg
    from flexmg.agents.trainer import Trainer

    with tempfile.TemporaryDirectory(prefix="update-eq-") as scratch:
        trainer = Trainer(train_config(budget, "group", Path(scratch) / "flexmg"))
        start = flexmg_weights(trainer)
        keys = sorted(start)
        trl = TRLSide(budget, str(Path(scratch) / "trl"), start)
        grads, restore = capture_grads(trainer, keys)
        vec = flexmg.make_vec(ENV, num_envs=budget.batch, **{**budget.env_kwargs, "split": "train"})
        theta0 = _flat([start[k] for k in keys])
        rows = []
        try:
            for step in range(budget.steps):
                batch = trainer.rollout(vec, step)
                samples = batch.samples
                rewards = [float(s.team_reward) for s in samples]
                adv_trl = trl_advantages(rewards, budget.samples)
                stats = trainer.learn(batch, step)
                g_trl, g_floor = trl.step(samples, adv_trl)
                adv_flex = [float(s.advantage) for s in samples]
                w_flex = flexmg_weights(trainer)
                w_trl = trl.weights()
                d_flex = _flat([w_flex[k] for k in keys]) - theta0
                d_trl = _flat([w_trl[k] for k in keys]) - theta0
                row = {
                    "step": step + 1, "success": sum(r > 0.5 for r in rewards) / len(rewards),
                    "tokens": sum(len(s.action_ids) for s in samples),
                    "advantages": compare(_as_tensor(adv_flex), _as_tensor(adv_trl)),
                    "gradient": compare(grads[-1], g_trl),
                    "noise_floor": compare(g_floor, g_trl),
                    "grad_norm": {"flexmg": float(grads[-1].norm()), "trl": float(g_trl.norm())},
                    "weights_moved": compare(d_flex, d_trl),
                    "flexmg_stats": {k: stats[k] for k in ("policy_loss", "grad_norm_actor")
                                     if k in stats},
                }  # fmt: skip
                rows.append(row)
                print(_line(row), flush=True)
        finally:
            restore()
            vec.close()
    result = {"budget": budget.to_dict(), "env": ENV, "steps": rows}
    if out is not None:
        from flexmg.io import atomic_write_json

        atomic_write_json(out, result, indent=2)
    return result


def _as_tensor(values: Sequence[float]) -> Any:
    import torch

    return torch.tensor(list(values), dtype=torch.float64)


def _line(row: dict[str, Any]) -> str:
    g, w, a = row["gradient"], row["weights_moved"], row["advantages"]
    return (
        f"step {row['step']}: success {row['success']:.3f}; advantages cos {a['cosine']:.4f} "
        f"ratio {a['norm_ratio']:.3f}; gradient cos {g['cosine']:.4f} ratio flexmg/TRL "
        f"{g['norm_ratio']:.3f} (norms {row['grad_norm']['flexmg']:.4f} / "
        f"{row['grad_norm']['trl']:.4f}; TRL vs itself at half the micro-batch: cos "
        f"{row['noise_floor']['cosine']:.4f}); weights moved: cos {w['cosine']:.4f} ratio "
        f"{w['norm_ratio']:.3f}, apart {w['rel_distance']:.3f} of TRL's move"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prompts", type=int, default=8, help="prompts per step")
    parser.add_argument("--samples", type=int, default=8, help="completions per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--micro-batch", type=int, default=16, help="rows per forward/backward")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    budget = Budget(model=args.model, steps=args.steps, seed=args.seed, prompts=args.prompts,
                    samples=args.samples, max_new_tokens=args.max_new_tokens,
                    micro_batch=args.micro_batch)  # fmt: skip
    run(budget, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
