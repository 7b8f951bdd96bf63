"""Train the solver of math-2agent with TRL's GRPOTrainer(environment_factory=...) on the CPU.

A complete program (docs/integrations.md, "TRL"): each rollout is one flexmg episode; the
solver may speak through the ``send_message`` tool, and a plain-text answer counts too
(``plain_text=True`` with :func:`~flexmg.integrations.trl.text_reward`: the completion's
final text is its message). The verifier's seat is a frozen
:class:`~flexmg.integrations.trl.ValueRelay`, so the team score grades the solver's value.
TRL needs a chat template that renders tool calls: SmolLM2 uses ChatML, the same markers
as Qwen2.5, so TRL's Qwen2.5 template is set on its tokenizer. With ``--base-url`` the
episodes play on a ``flexmg serve`` server instead (TRL's OpenEnv route).

Run (SmolLM2-135M-Instruct from flexmg's model zoo, no download; minutes per step on 2 cores)::

    python docs/integrations/trl_environment.py --steps 2 --prompts 4 --generations 2 --max-tokens 24
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path


def load(name: str, tokenizer: str | None = None):
    """The zoo's model and tokenizer, with a chat template that renders tool calls."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.chat_template_utils import qwen2_5_chat_template, supports_tool_calling

    from flexmg.models.zoo import local_path

    path = local_path(name)
    tok = AutoTokenizer.from_pretrained(tokenizer or path)
    tok.pad_token = tok.pad_token or tok.eos_token
    if not supports_tool_calling(tok):
        tok.chat_template = qwen2_5_chat_template  # ChatML models (SmolLM2, Qwen) share markers
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
    p.add_argument("--base-url", default=None, help="play on a `flexmg serve` server")
    p.add_argument("--out", default="trl_environment_rewards.json", help="the reward curve")
    p.add_argument("--output-dir", default="runs/trl_environment")
    args = p.parse_args(argv)

    from trl import GRPOConfig, GRPOTrainer

    from flexmg.integrations.trl import (
        ValueRelay,
        environment_dataset,
        make_environment_factory,
        text_reward,
    )

    model, tok = load(args.model, args.tokenizer)
    Env = make_environment_factory(
        args.env,
        role="solver",
        others={"verifier": ValueRelay("solver")},  # the team score grades the solver's value
        base_url=args.base_url,
        plain_text=True,  # a plain-text answer is the solver's message (text_reward)
    )
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.steps,
        per_device_train_batch_size=args.prompts * args.generations,
        num_generations=args.generations,
        max_completion_length=args.max_tokens,
        max_tool_calling_iterations=1,
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
    seeds = range(args.steps * args.prompts)
    trainer = GRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=text_reward,
        args=config,
        train_dataset=environment_dataset(args.env, role="solver", seeds=seeds),
        environment_factory=Env,
    )
    trainer.train()
    key = "rewards/text_reward/mean"
    curve = [e[key] for e in trainer.state.log_history if key in e]
    for step, reward in enumerate(curve, 1):
        print(f"step {step}: mean env reward {reward:.3f}")
    record = {"route": "environment_factory", "args": vars(args), "reward": curve}
    Path(args.out).write_text(json.dumps(record))
    return curve


if __name__ == "__main__":
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    main()
