"""Train the solver of math-2agent with TRL's GRPOTrainer(rollout_func=...) on the CPU.

A complete program (docs/integrations.md, "TRL"): the trainer's model plays the solver;
the verifier's seat is a frozen :class:`~flexmg.integrations.trl.ValueRelay`, which boxes
the solver's value, so the team score grades the value a chat model writes in plain text.
The reward is the env's (``env_reward``); the mean reward of each step is printed and
written to ``--out`` (JSON) as the run's reward curve.

Run (SmolLM2-135M-Instruct from flexmg's model zoo, no download; minutes per step on 2 cores)::

    python docs/integrations/trl_rollout.py --steps 2 --prompts 4 --generations 2 --max-tokens 24
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path


def load(name: str, tokenizer: str | None = None):
    """The zoo's model and tokenizer (``smollm2-135m``), or any local/HF-cached model."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from flexmg.models.zoo import local_path

    path = local_path(name)
    tok = AutoTokenizer.from_pretrained(tokenizer or path)
    tok.pad_token = tok.pad_token or tok.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return model, tok


def main(argv: list[str] | None = None) -> list[float]:
    """Train; returns the mean env reward of each step."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m", help="a zoo name, folder or HF id")
    p.add_argument("--tokenizer", default=None, help="its tokenizer's folder, if elsewhere")
    p.add_argument("--env", default="math-2agent")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--prompts", type=int, default=4, help="prompts per step")
    p.add_argument("--generations", type=int, default=2, help="samples per prompt (GRPO group)")
    p.add_argument("--max-tokens", type=int, default=24, help="tokens per completion")
    p.add_argument("--lr", type=float, default=1e-5)
    p.add_argument("--out", default="trl_rollout_rewards.json", help="the reward curve (JSON)")
    p.add_argument("--output-dir", default="runs/trl_rollout")
    args = p.parse_args(argv)

    from trl import GRPOConfig, GRPOTrainer

    from flexmg.integrations.trl import ValueRelay, env_reward, make_rollout_func

    model, tok = load(args.model, args.tokenizer)
    rollout = make_rollout_func(
        args.env,
        role="solver",
        others={"verifier": ValueRelay("solver")},  # the team score grades the solver's value
        seeds=range(args.steps * args.prompts),
    )
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.steps,
        per_device_train_batch_size=args.prompts * args.generations,
        num_generations=args.generations,
        max_completion_length=args.max_tokens,
        learning_rate=args.lr,
        beta=0.0,
        use_cpu=True,  # and full precision: GRPOConfig's bf16 default fails on a CPU
        bf16=False,
        gradient_checkpointing=False,  # TRL's default is on: slower, no memory to save here
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        dataloader_num_workers=0,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=env_reward,
        args=config,
        train_dataset=rollout.dataset(),
        rollout_func=rollout,
    )
    trainer.train()
    rollout.close()
    curve = [
        e["rewards/env_reward/mean"]
        for e in trainer.state.log_history
        if "rewards/env_reward/mean" in e
    ]
    for step, reward in enumerate(curve, 1):
        print(f"step {step}: mean env reward {reward:.3f}")
    Path(args.out).write_text(
        json.dumps({"route": "rollout_func", "args": vars(args), "reward": curve})
    )
    return curve


if __name__ == "__main__":
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    main()
