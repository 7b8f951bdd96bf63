"""The equal-budget setting that flexmg's learner and TRL's ``GRPOTrainer`` share.

One :class:`Budget` names what both sides get: the same model (``--model``: a zoo
name, a folder or a cached Hugging Face id, loaded by flexmg's one loader), the same
prompts (``math-1agent``'s train split, the env seeds ``flexmg train`` plays at each
update, rendered with flexmg's chat prompt: the solver's instructions as the system
message, the task as the user message), the same reward (the env's own score of the
completion: the value, however written, plus the small format term), the same samples
per step (``prompts`` x ``samples``, ``max_new_tokens``, temperature only: no top-k or
top-p), LoRA r16 a32 on the seven linear projections, one on-policy step per batch at
the same learning rate, micro-batches of the same size and no gradient checkpointing.

Used by ``bench_trl_throughput.py`` and ``trl_grpo_baseline.py``; ``peak_rss_mb`` is
the memory figure every side reports (``ru_maxrss`` of its own process).

Example (torch-free)::

    budget = Budget(model="smollm2-135m", steps=2, prompts=8, samples=8)
    rows = trl_rows(budget, chat=True)  # 16 prompts: the dataset TRL reads in order
"""

from __future__ import annotations

import dataclasses
import resource
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ENV = "math-1agent"
"""The task: one solver, one turn, graded by the math family's reward."""

TASKS: dict[str, Any] = {"name": "arithmetic", "max_operand": 40, "ops": "+"}
"""The main job's task (``scripts/train.sh``): "What is A + B?", A and B in 0-40."""

SOLVER_PROMPT = "You are the solver. Solve the problem and put the final answer in \\boxed{}."
"""The main job's solver instructions (``scripts/train.sh``), given to both sides."""

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""The seven linear projections of a Llama/Qwen2 block."""


@dataclass
class Budget:
    """What both learners get (see the module docstring); defaults: the main job's."""

    model: str = "smollm2-135m"
    steps: int = 2
    prompts: int = 8
    samples: int = 8
    max_new_tokens: int = 48
    temperature: float = 1.0
    lr: float = 2e-4
    lora_r: int = 16
    lora_alpha: int = 32
    micro_batch: int = 16
    seed: int = 0
    tasks: dict[str, Any] = field(default_factory=lambda: dict(TASKS))
    solver_prompt: str = SOLVER_PROMPT
    device: str = "cpu"
    dtype: str = "float32"

    def __post_init__(self) -> None:
        for name in ("steps", "prompts", "samples", "max_new_tokens", "micro_batch"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.samples < 2:
            raise ValueError(f"samples must be >= 2 (a group to compare), got {self.samples}")
        if self.batch % self.micro_batch:
            raise ValueError(
                f"micro_batch={self.micro_batch} must divide prompts x samples = {self.batch}"
            )

    @property
    def batch(self) -> int:
        """Completions per step."""
        return self.prompts * self.samples

    @property
    def env_kwargs(self) -> dict[str, Any]:
        """``flexmg.make`` keywords of the task (the split is added where it is played)."""
        return {"tasks": dict(self.tasks), "prompts": {"solver": self.solver_prompt}}

    def to_dict(self) -> dict[str, Any]:
        """The budget as plain JSON-able data."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Budget:
        """Inverse of :meth:`to_dict`."""
        return cls(**dict(data))


def tasks_option(text: str | None) -> dict[str, Any]:
    """``--tasks`` (JSON) as the env's ``tasks=``, checked by building the env once.

    Raises:
        ValueError: not JSON, or not a task spec the env takes (the env's own message).

    >>> tasks_option(None) == TASKS
    True
    >>> tasks_option("{oops")
    Traceback (most recent call last):
    ...
    ValueError: --tasks is not JSON ({oops): Expecting property name enclosed in double quotes
    """
    import json

    import flexmg

    if text is None:
        return dict(TASKS)
    try:
        tasks = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--tasks is not JSON ({text[:80]}): {exc.msg}") from None
    flexmg.make(ENV, tasks=tasks, split="train").close()
    return tasks


# ----------------------------------------------------------------------------- flexmg's side
def train_config(budget: Budget, algo: str, run_dir: str | Path) -> Any:
    """The ``flexmg train`` settings of the budget on ``math-1agent`` (``TrainConfig``).

    The main job's learner settings (``scripts/train.sh``): one epoch of one minibatch
    (one on-policy step per batch), critic learning rate 5e-4, no held-out evaluation.
    """
    from flexmg.agents.config import PolicyConfig, PPOConfig, TrainConfig

    policy = PolicyConfig(
        model=budget.model, lora_r=budget.lora_r, lora_alpha=budget.lora_alpha,
        lora_target_modules=list(LORA_TARGETS), temperature=budget.temperature,
        max_new_tokens=budget.max_new_tokens, micro_batch=budget.micro_batch,
        device=budget.device, dtype=budget.dtype,
    )  # fmt: skip
    ppo = PPOConfig(lr_actor=budget.lr, lr_critic=5e-4, epochs=1, minibatches=1,
                    lr_schedule="constant")  # fmt: skip
    return TrainConfig(
        env=ENV, algo=algo, seed=budget.seed, updates=budget.steps,
        episodes_per_update=budget.batch, group_size=budget.samples, eval_episodes=0,
        checkpoint_every=max(1, budget.steps), keep_checkpoints=1, progress=False,
        run_dir=str(run_dir), env_kwargs=budget.env_kwargs, policy=policy, ppo=ppo,
    )  # fmt: skip


def prompt_seeds(budget: Budget, step: int) -> list[int]:
    """The env seeds of the distinct prompts ``flexmg train`` plays at update ``step``.

    Computed by the trainer's own :meth:`~flexmg.agents.trainer.Trainer.rollout_seeds`
    (each prompt is played ``samples`` times in a row), without building a policy.
    """
    from flexmg.agents.trainer import Trainer

    holder = SimpleNamespace(config=train_config(budget, "marft", "unused"))
    holder.rollout_seed = lambda update: Trainer.rollout_seed(holder, update)  # type: ignore[arg-type]
    seeds = Trainer.rollout_seeds(holder, step)  # type: ignore[arg-type]
    return list(dict.fromkeys(seeds))


# ----------------------------------------------------------------------------- the prompts
def observations(budget: Budget, seeds: Sequence[int], split: str = "train") -> list[dict]:
    """The solver's first observation of ``math-1agent`` for each seed."""
    import flexmg

    env = flexmg.make(ENV, **budget.env_kwargs, split=split)
    try:
        out = []
        for s in seeds:
            env.reset(seed=int(s))
            out.append(dict(env.observe("solver")))
        return out
    finally:
        env.close()


def trl_prompt(obs: Mapping[str, Any], chat: bool) -> Any:
    """The prompt TRL is given for an observation: flexmg's chat messages, else its plain text.

    TRL renders chat messages with the tokenizer's template (generation prompt added,
    no special tokens added), which is what flexmg's chat prompt style tokenizes.
    """
    from flexmg.models.prompts import chat_messages, plain_prompt

    return chat_messages(obs) if chat else plain_prompt(obs)


def trl_rows(budget: Budget, chat: bool) -> list[dict[str, Any]]:
    """TRL's training dataset: every step's prompts in ``flexmg train``'s order, with their seeds.

    Read in order (``shuffle_dataset=False``), TRL's sampler gives step ``k`` rows
    ``k * prompts`` to ``(k + 1) * prompts - 1``, each ``samples`` times.
    """
    rows = []
    for step in range(budget.steps):
        seeds = prompt_seeds(budget, step)
        for s, obs in zip(seeds, observations(budget, seeds)):
            rows.append({"prompt": trl_prompt(obs, chat), "seed": s, "task": obs["task"]})
    return rows


# ----------------------------------------------------------------------------- the reward
def completion_text(completion: Any) -> str:
    """A TRL completion as text (a string, or a list of chat messages)."""
    if isinstance(completion, str):
        return completion
    return "".join(str(m.get("content") or "") for m in completion if isinstance(m, Mapping))


def env_reward(budget: Budget, split: str = "train") -> Callable[..., list[float]]:
    """A TRL reward function: the env's own score of each completion as the solver's turn.

    The row's ``seed`` resets ``math-1agent`` to the prompt the completion answers;
    the completion is the solver's action; the reward is the episode's score (what
    ``flexmg train`` gets for the same text). The function keeps every call's seeds in
    ``flexmg_reward.calls`` (a list of seed lists), so a run can show which prompts TRL
    trained on.
    """
    import flexmg

    env = flexmg.make(ENV, **budget.env_kwargs, split=split)
    calls: list[list[int]] = []

    def flexmg_reward(completions: Sequence[Any], seed: Sequence[int], **_: Any) -> list[float]:
        rewards = []
        for text, s in zip(completions, seed, strict=True):
            env.reset(seed=int(s))
            env.step(completion_text(text))
            rewards.append(float(env.episode_metrics["score"]))
        calls.append([int(s) for s in seed])
        return rewards

    flexmg_reward.calls = calls  # type: ignore[attr-defined]
    return flexmg_reward


# ----------------------------------------------------------------------------- TRL's side
def lora_config(budget: Budget) -> Any:
    """peft's ``LoraConfig`` of the budget (no dropout, the seven projections)."""
    from peft import LoraConfig

    return LoraConfig(
        r=budget.lora_r, lora_alpha=budget.lora_alpha, lora_dropout=0.0,
        target_modules=list(LORA_TARGETS), bias="none", task_type="CAUSAL_LM",
    )  # fmt: skip


def grpo_config(budget: Budget, output_dir: str | Path, **overrides: Any) -> Any:
    """TRL's ``GRPOConfig`` of the budget.

    ``prompts x samples`` completions per optimizer step, generated at once and
    trained in micro-batches of ``micro_batch`` (gradient accumulation), one
    iteration (on-policy), no KL term (no reference model), the prompts in order;
    full precision on the CPU (GRPOConfig's bf16 default fails there) and gradient
    checkpointing off (TRL's default is on; flexmg's learner does not checkpoint).
    TRL's own loss (``loss_type``) and reward scaling stay at their defaults unless
    ``overrides`` say otherwise.
    """
    from trl import GRPOConfig

    options: dict[str, Any] = dict(
        output_dir=str(output_dir), max_steps=budget.steps,
        per_device_train_batch_size=budget.micro_batch,
        gradient_accumulation_steps=budget.batch // budget.micro_batch,
        num_generations=budget.samples, max_completion_length=budget.max_new_tokens,
        temperature=budget.temperature, top_k=0, top_p=1.0, learning_rate=budget.lr,
        lr_scheduler_type="constant",
        beta=0.0, num_iterations=1, shuffle_dataset=False, use_cpu=budget.device == "cpu",
        bf16=budget.dtype == "bfloat16", fp16=False, gradient_checkpointing=False,
        disable_dropout=True, logging_steps=1, report_to="none", save_strategy="no",
        dataloader_num_workers=0, seed=budget.seed,
    )  # fmt: skip
    options.update(overrides)
    return GRPOConfig(**options)


def load(budget: Budget) -> tuple[Any, Any]:
    """(model, tokenizer) by flexmg's one loader, on the budget's device and dtype."""
    from flexmg.models.loading import load_model

    return load_model(budget.model, device=budget.device, dtype=budget.dtype)


def resolve_device(name: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; anything else as given."""
    if name != "auto":
        return name
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


# ----------------------------------------------------------------------------- memory
def peak_rss_mb() -> float:
    """This process's resident-set high-water mark in MiB (``getrusage``'s ``ru_maxrss``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def peak_gpu_mb() -> float | None:
    """The CUDA allocator's peak in MiB, or None without a GPU."""
    import torch

    if not torch.cuda.is_available():
        return None
    return torch.cuda.max_memory_allocated() / 2**20
