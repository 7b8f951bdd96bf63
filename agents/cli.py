"""``flexmg train`` and ``flexmg eval``: the command line of the learners.

``add_commands(subparsers)`` adds both commands to an ``argparse`` sub-parser
set (the ``flexmg`` console script calls it); ``python -m flexmg.agents.cli
train ...`` works on its own too.

Examples::

    flexmg train --algo marft --env math-2agent          # the main job: tiny model, CPU
    flexmg train --algo ippo --env math-3agent --seed 1 --updates 60
    flexmg train --resume runs/math-2agent-marft-20250101-120000
    flexmg eval --run runs/math-2agent-marft-20250101-120000 --env math-2agent --episodes 200
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

# flag -> (section, key) of TrainConfig / PolicyConfig / PPOConfig
_TRAIN_KEYS = {
    "env": ("train", "env"),
    "algo": ("train", "algo"),
    "seed": ("train", "seed"),
    "updates": ("train", "updates"),
    "episodes_per_update": ("train", "episodes_per_update"),
    "eval_every": ("train", "eval_every"),
    "eval_episodes": ("train", "eval_episodes"),
    "checkpoint_every": ("train", "checkpoint_every"),
    "keep_checkpoints": ("train", "keep_checkpoints"),
    "vectorization": ("train", "vectorization"),
    "run_dir": ("train", "run_dir"),
    "model": ("policy", "model"),
    "share_parameters": ("policy", "share_parameters"),
    "device": ("policy", "device"),
    "gradient_checkpointing": ("policy", "gradient_checkpointing"),
    "lora_target_modules": ("policy", "lora_target_modules"),
    "lora_r": ("policy", "lora_r"),
    "temperature": ("policy", "temperature"),
    "max_new_tokens": ("policy", "max_new_tokens"),
    "top_k": ("policy", "top_k"),
    "top_p": ("policy", "top_p"),
    "micro_batch": ("policy", "micro_batch"),
    "max_prompt_tokens": ("policy", "max_prompt_tokens"),
    "ratio": ("ppo", "ratio"),
    "truncation_penalty": ("ppo", "truncation_penalty"),
    "level": ("ppo", "level"),
    "lr": ("ppo", "lr_actor"),
    "critic_lr": ("ppo", "lr_critic"),
    "epochs": ("ppo", "epochs"),
    "minibatches": ("ppo", "minibatches"),
    "agent_interval": ("ppo", "agent_interval"),
    "critic_warmup": ("ppo", "critic_warmup"),
    "kl_coef": ("ppo", "kl_coef"),
    "target_kl": ("ppo", "target_kl"),
    "entropy_coef": ("ppo", "entropy_coef"),
    "gamma": ("ppo", "gamma"),
}


def _comma_list(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list such as q_proj,v_proj")
    return items


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``flexmg train`` (all default to None: unset flags keep config defaults)."""
    from flexmg.agents.marft import algorithm_names

    g = p.add_argument_group("run")
    g.add_argument("--algo", choices=algorithm_names(), help="learner (default marft)")
    g.add_argument("--env", help="env id (default math-2agent)")
    g.add_argument("--seed", type=int, help="run seed (default 0)")
    g.add_argument("--updates", type=int, help="PPO updates (default: TrainConfig.updates)")
    g.add_argument("--episodes-per-update", type=int, help="rollout episodes per update")
    g.add_argument("--horizon", type=int, help="rounds per episode (env kwarg)")
    g.add_argument("--run-dir", help="run folder (default runs/<env>-<algo>-<timestamp>)")
    g.add_argument("--resume", metavar="RUN_DIR", help="continue a run from its last checkpoint")
    g.add_argument("--eval-every", type=int, help="held-out eval every N updates")
    g.add_argument("--eval-episodes", type=int, help="episodes per held-out eval")
    g.add_argument("--checkpoint-every", type=int, help="checkpoint every N updates")
    g.add_argument("--keep-checkpoints", type=int, help="keep the newest K checkpoints (0 = all)")
    g.add_argument("--vectorization", choices=["sync", "async", "ray"], help="vector env kind")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    m = p.add_argument_group("model")
    m.add_argument("--model", help="'tiny' (default), a HF model id in the cache, or a path")
    m.add_argument(
        "--share-parameters",
        action="store_const",
        const=True,
        help="one LoRA adapter for all roles (MARFT with parameter sharing)",
    )
    m.add_argument("--device", help="auto (default), cpu, cuda, cuda:1, ...")
    m.add_argument("--bf16", action="store_const", const=True, help="bfloat16 weights")
    m.add_argument(
        "--gradient-checkpointing", action="store_const", const=True, help="save activation memory"
    )
    m.add_argument(
        "--lora-target-modules", type=_comma_list, help="comma-separated, e.g. q_proj,v_proj"
    )
    m.add_argument("--lora-r", type=int, help="LoRA rank")
    m.add_argument("--temperature", type=float, help="sampling temperature for rollouts")
    m.add_argument("--max-new-tokens", type=int, help="tokens per action (stop token included)")
    m.add_argument("--top-k", type=int, help="top-k truncation of rollouts (default 0: off)")
    m.add_argument("--top-p", type=float, help="nucleus truncation of rollouts (default 1: off)")
    m.add_argument(
        "--micro-batch", type=int, help="rows per forward pass (gradient accumulation; 0: all)"
    )
    m.add_argument("--max-prompt-tokens", type=int, help="prompt budget (oldest context cut)")
    o = p.add_argument_group("PPO")
    o.add_argument("--level", choices=["action", "token"], help="APPO or TPPO (default action)")
    o.add_argument(
        "--ratio",
        choices=["token", "action_mean", "action_sum"],
        help="importance ratio of APPO (default token: per-token clipping)",
    )
    o.add_argument(
        "--truncation-penalty", type=float, help="reward penalty for actions cut at the limit"
    )
    o.add_argument("--lr", type=float, help="adapter learning rate")
    o.add_argument("--critic-lr", type=float, help="value-head learning rate")
    o.add_argument("--epochs", type=int, help="PPO epochs per update")
    o.add_argument("--minibatches", type=int, help="minibatches per epoch")
    o.add_argument("--agent-interval", type=int, help="agent-by-agent interval K (0 = all)")
    o.add_argument("--critic-warmup", type=int, help="updates that train only the critic")
    o.add_argument("--kl-coef", type=float, help="KL penalty to the base model")
    o.add_argument("--target-kl", type=float, help="skip policy steps above this approx KL")
    o.add_argument("--entropy-coef", type=float, help="entropy bonus")
    o.add_argument("--gamma", type=float, help="discount")


def config_overrides(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The sections ``train``/``policy``/``ppo`` set by the given (non-None) flags."""
    out: dict[str, dict[str, Any]] = {"train": {}, "policy": {}, "ppo": {}}
    for flag, (section, key) in _TRAIN_KEYS.items():
        value = getattr(args, flag, None)
        if value is not None:
            out[section][key] = value
    if getattr(args, "bf16", None):
        out["policy"]["dtype"] = "bfloat16"
    if getattr(args, "horizon", None) is not None:
        out["train"]["env_kwargs"] = {"horizon": args.horizon}
    if getattr(args, "no_progress", False):
        out["train"]["progress"] = False
    return out


def cmd_train(args: argparse.Namespace) -> int:
    """Run (or resume) a training run and print its summary."""
    from flexmg.agents.trainer import TrainConfig, Trainer

    ov = config_overrides(args)
    if args.resume:
        from flexmg.agents.checkpoint import CheckpointError

        if ov["policy"] or ov["ppo"] or set(ov["train"]) - {"updates", "progress", "eval_every"}:
            changed = sorted(set(ov["policy"]) | set(ov["ppo"]) | set(ov["train"]))
            print(
                f"flexmg train: --resume continues the saved configuration; only --updates, "
                f"--eval-every and --no-progress may change (got {changed})",
                file=sys.stderr,
            )
            return 2
        try:
            trainer = Trainer.resume(args.resume, **ov["train"])
        except CheckpointError as exc:
            print(f"flexmg train: {exc}", file=sys.stderr)
            return 1
    else:
        trainer = Trainer(TrainConfig(**ov["train"], policy=ov["policy"], ppo=ov["ppo"]))
    print(f"run folder: {trainer.run_dir}", file=sys.stderr)
    try:
        summary = trainer.run()
    except FileExistsError as exc:
        print(f"flexmg train: {exc}", file=sys.stderr)
        return 2
    keys = ("eval_start", "eval_end", "correct_start", "correct_end", "format_start",
            "format_end", "eval_prompts", "updates", "wall_seconds", "run_dir")  # fmt: skip
    print(json.dumps({k: summary.get(k) for k in keys}, indent=2))
    return 0


def add_eval_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``flexmg eval``."""
    p.add_argument("--run", required=True, metavar="RUN_DIR", help="a training run folder")
    p.add_argument("--env", help="env id (default: the run's env)")
    p.add_argument("--episodes", type=int, default=200, help="episodes (default 200)")
    p.add_argument("--checkpoint", help="checkpoint file (default: the run's newest)")
    p.add_argument("--split", choices=["eval", "train", "all"], default="eval")
    p.add_argument("--seed", type=int, default=0, help="first episode seed (default 0)")
    p.add_argument("--sample", action="store_true", help="sample instead of greedy decoding")
    p.add_argument("--device", help="override the run's device")
    p.add_argument("--output", help="JSON file to write (default RUN_DIR/evals/...)")


def cmd_eval(args: argparse.Namespace) -> int:
    """Evaluate a run's checkpoint on an env and print/write the results."""
    from flexmg.agents.checkpoint import CheckpointError, latest_checkpoint, load_checkpoint
    from flexmg.agents.evaluation import evaluate_policy
    from flexmg.agents.policy import PolicyConfig, TeamPolicy
    from flexmg.agents.trainer import env_roles
    from flexmg.io import atomic_write_text

    run = Path(args.run)
    try:
        cfg = json.loads((run / "config.json").read_text())
        ckpt = Path(args.checkpoint) if args.checkpoint else latest_checkpoint(run / "checkpoints")
        if ckpt is None:
            raise CheckpointError(f"no checkpoint in {run / 'checkpoints'}")
        state = load_checkpoint(ckpt)
    except (OSError, json.JSONDecodeError, CheckpointError) as exc:
        print(f"flexmg eval: cannot load run {run}: {exc}", file=sys.stderr)
        return 1
    env_id = args.env or cfg["train"]["env"]
    env_kwargs = dict(cfg["train"].get("env_kwargs") or {})
    roles = env_roles(env_id, env_kwargs)
    if roles != cfg["roles"]:
        print(
            f"flexmg eval: env {env_id!r} has roles {roles} but the run was trained with "
            f"{cfg['roles']}; pick an env with the same roles",
            file=sys.stderr,
        )
        return 2
    pcfg = dict(cfg["policy_config"])
    if args.device:
        pcfg["device"] = args.device
    policy = TeamPolicy(roles, PolicyConfig(**pcfg))
    policy.load_trainable_state(state["policy"])
    policy.eval()
    t0 = time.monotonic()
    result = evaluate_policy(
        policy,
        env_id,
        args.episodes,
        seed=args.seed,
        env_kwargs=env_kwargs,
        split=args.split,
        greedy=not args.sample,
    )
    result.update(
        env=env_id,
        split=args.split,
        seed=args.seed,
        greedy=not args.sample,
        checkpoint=str(ckpt),
        updates=int(state["counters"]["updates_done"]),
        seconds=time.monotonic() - t0,
    )
    out = (
        Path(args.output)
        if args.output
        else (run / "evals" / f"{env_id}-{args.split}-n{args.episodes}-s{args.seed}.json")
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


def add_commands(subparsers: Any) -> None:
    """Add ``train`` and ``eval`` to an ``argparse`` sub-parser set."""
    train = subparsers.add_parser(
        "train",
        help="train MARFT or IPPO on an env (tiny model on CPU by default)",
        description="Train a team of LoRA agents with MARFT or IPPO and write a run folder.",
    )
    add_train_arguments(train)
    train.set_defaults(func=cmd_train)
    ev = subparsers.add_parser(
        "eval",
        help="evaluate a training run's checkpoint",
        description="Evaluate a run's checkpoint on held-out episodes (greedy by default).",
    )
    add_eval_arguments(ev)
    ev.set_defaults(func=cmd_eval)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m flexmg.agents.cli``."""
    from flexmg.cli import standalone_main

    return standalone_main(add_commands, "python -m flexmg.agents.cli", argv)


if __name__ == "__main__":
    sys.exit(main())
