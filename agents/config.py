"""The learner's settings: the run, the team policy, the PPO update, the sampling.

:class:`TrainConfig` (a training run; ``flexmg train``'s "run" flags) holds a
:class:`PolicyConfig` (the team policy; "model" flags) and a :class:`PPOConfig`
(the update; "PPO" flags). Each field is declared once, with its default, help,
checks and flag (:mod:`flexmg.settings`): their docstrings, validation,
``to_dict``/``from_dict`` and the command line all come from there. A field
whose default depends on the model or the env (``None``: temperature, tokens
per action, micro-batch, learning rates) is filled in one place:
:meth:`PolicyConfig.resolved` / :meth:`PPOConfig.resolved`, from
:data:`MODEL_DEFAULTS` and the env family's token budget.
:class:`RunConfig` is a run folder's ``config.json`` read back into these types.
The module imports no torch, so ``flexmg train --help`` stays fast.

Example:
    >>> cfg = PPOConfig.from_dict({"epochs": 3})
    >>> cfg.epochs, cfg.to_dict()["epochs"], PPOConfig.from_dict(cfg.to_dict()) == cfg
    (3, 3, True)
    >>> PPOConfig(level="word")
    Traceback (most recent call last):
    ...
    ValueError: PPOConfig.level must be one of 'action', 'token'; got 'word'
    >>> PolicyConfig(temperature=0)
    Traceback (most recent call last):
    ...
    ValueError: PolicyConfig.temperature must be > 0 (use greedy for argmax); got 0
    >>> TrainConfig.from_dict({"policy": {"lora_r": 4}}).policy.lora_r
    4
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flexmg.models.config import DTYPE_NAMES, SamplingConfig
from flexmg.models.zoo import model_kind
from flexmg.settings import Check, Settings, documented, setting

if TYPE_CHECKING:
    from flexmg.family import Family

__all__ = [
    "MODEL_DEFAULTS",
    "PPOConfig",
    "PolicyConfig",
    "RATIOS",
    "RunConfig",
    "RunConfigError",
    "TrainConfig",
]

MODEL_DEFAULTS: dict[str, dict[str, dict[str, Any]]] = {
    "tiny": {
        "policy": {"temperature": 1.0, "micro_batch": 0},
        "ppo": {"lr_actor": 1e-3, "lr_critic": 1e-3, "adam_eps": 1e-5},
    },
    "llm": {
        "policy": {"temperature": 0.5, "micro_batch": 8},
        "ppo": {"lr_actor": 1e-5, "lr_critic": 5e-5, "adam_eps": 1e-8},
    },
}
"""The settings whose default depends on the model's kind (``flexmg.models.zoo.model_kind``).

``tiny``: the tiny model on CPU (the main job). ``llm``: starting points for real
models; sampling is temperature only (no top-k/top-p: docs/marft.md), and
micro-batches of 8 rows keep an update of 128 episodes x 512 tokens in bounded
memory (the MARFT reference hyperparameters, lr 1e-6, are for 7B models). The
tokens per action come from the env family (``flexmg.family``)."""

RATIOS = ("token", "action_mean", "action_sum")
"""The importance ratios of APPO (:attr:`PPOConfig.ratio`)."""


def _positive(v: Any) -> bool:
    return v > 0


def _at_least(low: int) -> Check:
    return (lambda v: v >= low, f">= {low}")


def _algorithm_names() -> list[str]:
    from flexmg.agents.marft import algorithm_names

    return algorithm_names()


@documented
@dataclass
class PolicyConfig(Settings):
    """Settings of a ``TeamPolicy`` (defaults: the tiny model on CPU; "model" flags).

    >>> PolicyConfig(lora_r=4).resolved().sampling
    SamplingConfig(temperature=1.0, top_k=0, top_p=1.0)
    """

    model: str = setting(
        "tiny",
        "'tiny' (default), a HF model id in the cache, or a path",
        flag="--model",
        check=(lambda v: isinstance(v, str) and bool(v), "a non-empty str"),
    )
    share_parameters: bool = setting(
        False,
        "one LoRA adapter for all roles (MARFT with parameter sharing)",
        flag="--share-parameters",
    )
    critic: str = setting(
        "centralized",
        "'centralized' (one value head, MARFT), 'per_role' (IPPO) or 'none' (critic-free)",
        choices=("centralized", "per_role", "none"),
    )
    lora_r: int = setting(8, "LoRA rank", flag="--lora-r", check=(_positive, "> 0"))
    lora_alpha: int = setting(
        16, "LoRA scaling numerator", flag="--lora-alpha", check=(_positive, "> 0")
    )
    lora_dropout: float = setting(
        0.0,
        "LoRA dropout; PPO always scores with dropout off (the ratio must compare one "
        "function), so it only matters for other uses of the saved adapters",
        check=(lambda v: 0.0 <= v < 1.0, "in [0, 1)"),
    )
    lora_target_modules: list[str] | None = setting(
        None,
        "module names to adapt, comma-separated, e.g. q_proj,v_proj (default: peft's "
        "for the model family: q_proj,v_proj for Qwen2 and Llama, c_attn for GPT-2)",
        flag="--lora-target-modules",
        check=(
            lambda v: v is None or len(v) > 0,
            "None (the family's default) or a non-empty list",
        ),
    )
    max_new_tokens: int | None = setting(
        None,
        "tokens per action, stop token included (default: the env family's budget for the "
        "model's kind)",
        flag="--max-new-tokens",
        check=(lambda v: v is None or v >= 1, ">= 1 (None: the family's budget)"),
    )
    temperature: float | None = setting(
        None,
        "sampling temperature for rollouts, the learner uses the same (default: the model kind's)",
        flag="--temperature",
        check=(lambda v: v is None or v > 0, "> 0 (use greedy for argmax)"),
    )
    role_temperature: dict[str, float] = setting(
        factory=dict,
        help="a role's own sampling temperature, e.g. verifier=0.7 (others: --temperature)",
        flag="--role-temperature",
        check=(
            lambda v: all(isinstance(t, (int, float)) and t > 0 for t in v.values()),
            "role=temperature pairs with temperatures > 0",
        ),
    )
    role_max_new_tokens: dict[str, int] = setting(
        factory=dict,
        help="a role's own tokens per action, e.g. verifier=16 (default: the env family's "
        "budget for the role, else --max-new-tokens)",
        flag="--role-max-new-tokens",
        check=(
            lambda v: all(isinstance(n, int) and n >= 1 for n in v.values()),
            "role=tokens pairs with tokens >= 1",
        ),
    )
    top_k: int = setting(
        0,
        "top-k truncation of rollouts (default 0: off; see docs/marft.md)",
        flag="--top-k",
        check=(lambda v: v >= 0, ">= 0 (0 disables it)"),
    )
    top_p: float = setting(
        1.0,
        "nucleus truncation of rollouts (default 1: off)",
        flag="--top-p",
        check=(lambda v: 0.0 < v <= 1.0, "in (0, 1]"),
    )
    max_prompt_tokens: int = setting(
        1024,
        "prompt budget (longer prompts lose their oldest context first)",
        flag="--max-prompt-tokens",
        check=_at_least(8),
    )
    logprob_reduction: str = setting(
        "sum", "an action's log-prob is the sum or the mean of its tokens'", choices=("sum", "mean")
    )
    critic_hidden: tuple[int, ...] = setting((1024, 512), "hidden widths of the value-head MLP")
    micro_batch: int | None = setting(
        None,
        "rows per forward pass (gradient accumulation; 0: all; default: the model kind's); "
        "results equal the unbatched computation",
        flag="--micro-batch",
        check=(lambda v: v is None or v >= 0, ">= 0 (0: the whole batch)"),
    )
    device: str = setting("auto", "auto (default), cpu, cuda, cuda:1, ...", flag="--device")
    dtype: str = setting(
        "auto",
        "auto (bf16 on a CUDA device that has it, else fp32) or a dtype name",
        flag="--dtype",
        shortcuts={"--bf16": "bfloat16"},
        choices=("auto", *sorted(DTYPE_NAMES)),
    )
    gradient_checkpointing: bool = setting(
        False,
        "save activation memory (recompute the base's activations in the backward pass)",
        flag="--gradient-checkpointing",
    )
    seed: int | None = setting(
        None, "seed of the adapters' and value heads' initialization (default: the run's, or 0)"
    )
    prompt_style: str = setting(
        "auto",
        "auto, compact (tiny model), chat or plain",
        choices=("auto", "compact", "chat", "plain"),
    )

    def __post_init__(self) -> None:
        if self.lora_target_modules is not None:
            self.lora_target_modules = list(self.lora_target_modules)
        self.critic_hidden = tuple(int(h) for h in self.critic_hidden)
        super().__post_init__()

    @property
    def sampling(self) -> SamplingConfig:
        """The rollout sampling distribution (also the learner's); needs a resolved temperature."""
        if self.temperature is None:
            raise ValueError(
                "PolicyConfig.temperature is None (the model kind's default): resolve the "
                "config first (PolicyConfig.resolved())"
            )
        return SamplingConfig(self.temperature, self.top_k, self.top_p)

    def sampling_for(self, role: str) -> SamplingConfig:
        """``role``'s sampling distribution: its own temperature, else :attr:`sampling`'s.

        >>> cfg = PolicyConfig(role_temperature={"verifier": 0.5}).resolved()
        >>> cfg.sampling_for("verifier").temperature, cfg.sampling_for("solver").temperature
        (0.5, 1.0)
        """
        base = self.sampling
        own = self.role_temperature.get(role)
        return base if own is None else replace(base, temperature=float(own))

    def max_new_tokens_for(self, role: str) -> int:
        """``role``'s tokens per action: its own budget, else ``max_new_tokens``."""
        own = self.role_max_new_tokens.get(role)
        if own is not None:
            return int(own)
        if self.max_new_tokens is None:
            raise ValueError("PolicyConfig.max_new_tokens is None: resolve the config first")
        return int(self.max_new_tokens)

    def resolved(
        self, family: Family | None = None, roles: Sequence[str] | None = None,
        seed: int | None = None,
    ) -> PolicyConfig:  # fmt: skip
        """These settings with every ``None`` filled: the one place their defaults live.

        ``temperature`` and ``micro_batch`` come from the model's kind
        (:data:`MODEL_DEFAULTS`), ``max_new_tokens`` from the env family's token budget
        for that kind (:meth:`flexmg.family.Family.token_budget`, of ``roles``; no
        family: the kind's default budget), ``seed`` from ``seed`` (else 0).

        >>> p = PolicyConfig().resolved()
        >>> p.temperature, p.max_new_tokens, p.micro_batch, p.seed
        (1.0, 24, 0, 0)
        >>> PolicyConfig(model="Qwen/Qwen2.5-0.5B").resolved().max_new_tokens
        512
        """
        from flexmg.family import token_budget

        kind = model_kind(self.model)
        usual = MODEL_DEFAULTS[kind]["policy"]
        per_role = dict(self.role_max_new_tokens)
        budgets = family.token_budgets.get(kind) if family is not None else None
        if (
            self.max_new_tokens is None
            and family is not None
            and isinstance(budgets, Mapping)
            and roles
        ):
            for role in roles:  # the family gives its roles budgets of their own
                per_role.setdefault(role, family.token_budget(kind, role))
        return replace(
            self,
            role_max_new_tokens=per_role,
            temperature=usual["temperature"] if self.temperature is None else self.temperature,
            micro_batch=usual["micro_batch"] if self.micro_batch is None else self.micro_batch,
            max_new_tokens=(
                token_budget(family, kind, roles)
                if self.max_new_tokens is None
                else self.max_new_tokens
            ),
            seed=(seed if seed is not None else 0) if self.seed is None else self.seed,
        )


@documented
@dataclass
class PPOConfig(Settings):
    """PPO hyperparameters (defaults suit the tiny model; docs/marft.md has the 7B ones)."""

    level: str = setting(
        "action",
        "APPO (action: one advantage per action) or TPPO (token) (default action)",
        flag="--level",
        choices=("action", "token"),
    )
    ratio: str = setting(
        "token",
        "importance ratio of APPO (default token: per-token clipping; action_mean: "
        "exp of the mean token log-ratio; action_sum: of the sum, see docs/marft.md); TPPO "
        "always uses token ratios",
        flag="--ratio",
        choices=RATIOS,
    )
    gamma: float = setting(0.99, "discount between consecutive steps of a chain", flag="--gamma")
    lam: float = setting(
        0.95,
        "GAE lambda between steps (0: each step's advantage is its one-step TD error, "
        "so a successor's critic alone carries credit back along the chain)",
        flag="--gae-lambda",
        check=(lambda v: 0.0 <= v <= 1.0, "in [0, 1]"),
    )
    token_gamma: float = setting(1.0, "TPPO discount between tokens of one action")
    token_lam: float = setting(1.0, "TPPO GAE lambda between tokens of one action")
    clip: float = setting(0.2, "PPO ratio clip")
    value_clip: float = setting(0.2, "value-loss clip around the old value (0: off)")
    entropy_coef: float = setting(
        0.01, "entropy bonus (0: entropy is not even computed)", flag="--entropy-coef"
    )
    value_coef: float = setting(0.5, "weight of the value loss")
    max_grad_norm: float = setting(0.5, "gradient-norm clip per adapter and per value head")
    target_kl: float | None = setting(
        0.1,
        "skip policy steps above this approx KL (the role stops for the update; None: never)",
        flag="--target-kl",
    )
    epochs: int = setting(2, "PPO epochs per update", flag="--epochs", check=_at_least(1))
    minibatches: int = setting(
        2, "minibatches per epoch (per role)", flag="--minibatches", check=_at_least(1)
    )
    critic_warmup: int = setting(
        0, "updates that train only the critic", flag="--critic-warmup", check=_at_least(0)
    )
    critic_steps: int = setting(
        0,
        "extra critic-only steps per update on the rollout's cached features (action level)",
        flag="--critic-steps",
        check=_at_least(0),
    )
    critic_holdout: float = setting(
        0.0,
        "share of episodes kept out of the critic-only steps; the critic keeps its best held-out step",
        flag="--critic-holdout",
        check=(lambda v: 0.0 <= v < 1.0, "in [0, 1)"),
    )
    agent_interval: int = setting(
        0,
        "agent-by-agent interval K (only role update // K mod N learns; 0 = all)",
        flag="--agent-interval",
        check=_at_least(0),
    )
    lr_actor: float | None = setting(
        None,
        "adapter learning rate (default: the model kind's)",
        flag="--lr",
        check=(lambda v: v is None or v > 0, "> 0"),
    )
    lr_critic: float | None = setting(
        None,
        "value-head learning rate (default: the model kind's)",
        flag="--critic-lr",
        check=(lambda v: v is None or v > 0, "> 0"),
    )
    adam_eps: float | None = setting(
        None,
        "Adam's epsilon (default: the model kind's; 1e-8 for real models, whose LoRA "
        "gradients per parameter are ~1e-5 and would be damped by a larger one)",
        flag="--adam-eps",
        check=(lambda v: v is None or v > 0, "> 0"),
    )
    kl_coef: float = setting(0.0, "KL penalty to the base model (0: off)", flag="--kl-coef")
    lr_schedule: str = setting(
        "linear",
        "constant, or linear (decay to 0 over the run)",
        flag="--lr-schedule",
        choices=("constant", "linear"),
    )
    normalize_advantages: bool = setting(True, "normalise advantages over the batch")
    truncation_penalty: float = setting(
        0.0,
        "reward penalty for actions cut at the limit (max_new_tokens, no stop token)",
        flag="--truncation-penalty",
    )
    recompute_old: bool = setting(
        False,
        "recompute old log-probs and values in a second pass instead of taking the "
        "rollout's (for batches from elsewhere)",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.critic_holdout and not self.critic_steps:
            raise ValueError(
                "PPOConfig.critic_holdout needs critic-only steps to stop early: give "
                "--critic-steps K (K > 0) with --critic-holdout"
            )

    def resolved(self, kind: str) -> PPOConfig:
        """These settings with the learning rates of the model ``kind`` where they are None.

        >>> PPOConfig().resolved("llm").lr_actor, PPOConfig(lr_actor=0.1).resolved("tiny").lr_actor
        (1e-05, 0.1)
        """
        usual = MODEL_DEFAULTS[kind]["ppo"]
        return replace(
            self,
            lr_actor=usual["lr_actor"] if self.lr_actor is None else self.lr_actor,
            lr_critic=usual["lr_critic"] if self.lr_critic is None else self.lr_critic,
            adam_eps=usual["adam_eps"] if self.adam_eps is None else self.adam_eps,
        )


@documented
@dataclass
class TrainConfig(Settings):
    """A training run's settings (``flexmg train``'s "run" flags set them)."""

    env: str = setting("math-2agent", "env id (default math-2agent)", flag="--env")
    algo: str = setting(
        "marft",
        "learner: marft, ippo or a registered Algorithm (default marft)",
        flag="--algo",
        choices=_algorithm_names,
    )
    seed: int = setting(
        0, "run seed: policy init, rollouts, sampling, shuffling (default 0)", flag="--seed"
    )
    updates: int = setting(30, "PPO updates (default 30)", flag="--updates", check=_at_least(0))
    episodes_per_update: int = setting(
        128,
        "rollout episodes per update (the vector env's size)",
        flag="--episodes-per-update",
        check=_at_least(1),
    )
    group_size: int = setting(
        1,
        "play each training prompt G times per rollout (group baselines need G >= 2; "
        "episodes per update must be a multiple of G)",
        flag="--group-size",
        check=_at_least(1),
    )
    eval_every: int = setting(
        10,
        "held-out eval every N updates (and at 0 and the end)",
        flag="--eval-every",
        check=_at_least(1),
    )
    eval_episodes: int = setting(
        400,
        "episodes per held-out eval (greedy decoding, split eval)",
        flag="--eval-episodes",
        check=_at_least(0),
    )
    eval_seed: int = setting(0, "seed of the held-out eval episodes (the same set every time)")
    transcripts: int = setting(
        32,
        "episodes whose transcripts each held-out eval (and the rollout before it) saves for "
        "flexmg view (default 32; 0: none; docs/viewer.md)",
        flag="--transcripts",
        check=_at_least(0),
    )
    env_kwargs: dict[str, Any] = setting(
        factory=dict,
        help="extra kwargs for flexmg.make, e.g. horizon=2 (--horizon N is short for it)",
        flag="--kw",
    )
    run_dir: str | None = setting(
        None, "run folder (default runs/<env>-<algo>-<timestamp>)", flag="--run-dir"
    )
    checkpoint_every: int = setting(
        10,
        "checkpoint every N updates (and at the end)",
        flag="--checkpoint-every",
        check=_at_least(1),
    )
    keep_checkpoints: int = setting(
        3, "keep the newest K checkpoints (0 = all)", flag="--keep-checkpoints", check=_at_least(0)
    )
    vectorization: str = setting(
        "sync", "vector env kind", flag="--vectorization", choices=("sync", "async", "ray")
    )
    progress: bool = setting(True, "show a progress bar", flag="--no-progress")
    policy: PolicyConfig = setting(
        factory=PolicyConfig,
        help="the team policy (its critic is set by the algorithm)",
        group="model",
    )
    ppo: PPOConfig = setting(factory=PPOConfig, help="the PPO update", group="PPO")

    def resolved(
        self, roles: Sequence[str], critic: str
    ) -> tuple[PolicyConfig, PPOConfig]:  # fmt: skip
        """The complete policy and PPO settings of this run (``None`` fields filled).

        From the model's kind and the env family's token budget
        (:meth:`PolicyConfig.resolved`); the policy's seed defaults to the run's, and
        its critic is the algorithm's.
        """
        from flexmg.family import family_of

        policy = self.policy.resolved(family_of(self.env), roles, seed=self.seed)
        return replace(policy, critic=critic), self.ppo.resolved(model_kind(self.policy.model))


# ----------------------------------------------------------------------------- config.json


class RunConfigError(ValueError):
    """A run folder's ``config.json`` is missing or is not a flexmg training run's."""


@dataclass
class RunConfig:
    """A run folder's ``config.json``: the run's settings and what they resolved to.

    ``train`` is what the run was started with; ``policy_config`` and
    ``ppo_config`` are the complete settings the trainer derived from it (model
    defaults filled in, ``critic`` set by the algorithm).

    >>> run = RunConfig(TrainConfig(env="echo"), {"name": "marft", "critic": "centralized"},
    ...                 ["a", "b"], PolicyConfig(), PPOConfig())
    >>> RunConfig.from_dict(json.loads(json.dumps(run.to_dict()))) == run
    True
    """

    train: TrainConfig
    algorithm: dict[str, Any]
    roles: list[str]
    policy_config: PolicyConfig
    ppo_config: PPOConfig

    def to_dict(self) -> dict[str, Any]:
        """The ``config.json`` mapping."""
        return {
            "train": self.train.to_dict(),
            "algorithm": dict(self.algorithm),
            "roles": list(self.roles),
            "policy_config": self.policy_config.to_dict(),
            "ppo_config": self.ppo_config.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConfig:
        """Inverse of :meth:`to_dict` (``RunConfigError`` for a missing section)."""
        missing = [k for k in ("train", "roles", "policy_config") if k not in data]
        if missing:
            sections = ", ".join(repr(k) for k in missing)
            raise RunConfigError(f"no {sections} section; is it a flexmg training run's config?")
        train = TrainConfig.from_dict(data["train"])
        policy = PolicyConfig.from_dict(data["policy_config"])
        algorithm = data.get("algorithm") or {"name": train.algo, "critic": policy.critic}
        return cls(
            train=train,
            algorithm={str(k): v for k, v in algorithm.items()},
            roles=[str(r) for r in data["roles"]],
            policy_config=policy,
            ppo_config=PPOConfig.from_dict(data.get("ppo_config") or {}),
        )

    @classmethod
    def read(cls, run_dir: str | os.PathLike[str]) -> RunConfig:
        """``run_dir/config.json``; ``RunConfigError`` with the path when absent or unreadable.

        >>> RunConfig.read("/nonexistent")  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        RunConfigError: /nonexistent/config.json not found: ...
        """
        path = Path(run_dir) / "config.json"
        if not path.is_file():
            raise RunConfigError(
                f"{path} not found: a run folder is what `flexmg train` writes (config.json + "
                "checkpoints/); check the path"
            )
        try:
            return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError, TypeError, ValueError) as exc:
            raise RunConfigError(f"cannot read {path}: {exc}") from exc


# ----------------------------------------------------------------------------- flags
