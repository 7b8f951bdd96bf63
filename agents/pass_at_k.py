"""Held-out pass@k of a team, played through the real env, per distinct prompt.

For each of ``n`` distinct eval-split prompts the team plays one greedy episode
and ``k`` sampled episodes of a registered env (``flexmg.make``; real grader,
real sandbox). Each episode yields *success* (the env's verdict), *format*
(the graded role's answer is well-formed) and *correct* (its value is right
however it is written). Rates come with 95% bootstrap CIs over prompts.

An actor is any ``(role, observations, greedy) -> actions`` callable:
:class:`ModelActor` wraps a bare causal LM (the warm-started tiny model at
step 0); a trained team's ``TeamPolicy.act`` fits the same shape.

Example:
    >>> pass_at_k(n=8, c=2, k=1), pass_at_k(n=8, c=0, k=8), pass_at_k(n=8, c=1, k=8)
    (0.25, 0.0, 1.0)
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from flexmg.tasks import Task

Observations = Sequence[Mapping[str, Any]]
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:/\d+)?")


class Actor(Protocol):
    """Acts for one role on a batch of observations."""

    def __call__(self, role: str, observations: Observations, greedy: bool) -> list[str]:
        """One message per observation, greedy or sampled."""
        ...


@dataclass(frozen=True)
class EpisodeOutcome:
    """What one episode says about the team on one prompt."""

    prompt: str
    success: bool
    score: float
    format_ok: bool
    correct: bool
    rounds: int


class ModelActor:
    """A bare causal LM acting in the compact prompt format (same decoding as the policy).

    Sampling uses ``temperature``/``top_k`` like ``PolicyConfig``; ``seed``
    seeds a private torch RNG stream (the global one is left untouched).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        max_new_tokens: int = 24,
        temperature: float = 1.0,
        top_k: int = 50,
        seed: int = 0,
    ) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens, self.temperature, self.top_k = max_new_tokens, temperature, top_k
        self._generator_state = _seeded_state(seed)

    @torch.no_grad()
    def __call__(self, role: str, observations: Observations, greedy: bool) -> list[str]:
        """Generate one message per observation with the model (greedy or sampled)."""
        from flexmg.agents.prompts import compact_prompt

        tok = self.tokenizer
        prompts = [
            [tok.bos_token_id, *tok(compact_prompt(o), add_special_tokens=False)["input_ids"]]
            for o in observations
        ]
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), tok.pad_token_id, dtype=torch.long)
        attn = torch.zeros_like(ids)
        for i, p in enumerate(prompts):
            ids[i, width - len(p) :] = torch.tensor(p)
            attn[i, width - len(p) :] = 1
        sampling = {} if greedy else {"temperature": self.temperature, "top_k": self.top_k}
        with torch.random.fork_rng(devices=[]):
            torch.random.set_rng_state(self._generator_state)
            out = self.model.generate(
                input_ids=ids,
                attention_mask=attn,
                do_sample=not greedy,
                max_new_tokens=self.max_new_tokens,
                pad_token_id=tok.pad_token_id,
                eos_token_id=tok.eos_token_id,
                **sampling,
            )
            self._generator_state = torch.random.get_rng_state()
        return tok.batch_decode(out[:, width:], skip_special_tokens=True)


def _seeded_state(seed: int) -> torch.Tensor:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.random.get_rng_state()


def distinct_eval_tasks(env: Any, n: int, max_draws: int | None = None) -> list[Task]:
    """The first ``n`` distinct prompts of an env's task source (build it with ``split="eval"``).

    Sources with fewer prompts give all they find in ``max_draws`` draws (default ``50 n``).
    """
    source = env.task_source
    size = _length(source)
    draws = max_draws if max_draws is not None else max(1000, 50 * n)
    seen: dict[str, Task] = {}
    for index in range(min(draws, size) if size is not None else draws):
        task = source.get(index)
        seen.setdefault(task.prompt, task)
        if len(seen) >= n:
            break
    return list(seen.values())


def _length(source: Any) -> int | None:
    try:
        return len(source)
    except TypeError:
        return None


def _answer_correct(task: Task, action: str, info: Mapping[str, Any], success: bool) -> bool:
    """The env's ``answer_correct`` when it reports one; otherwise judged here."""
    if info.get("answer_correct") is not None:
        return bool(info["answer_correct"])
    if "tests_total" in info:  # code: right means every hidden test passes
        total = info.get("tests_total") or 0
        return bool(total) and info.get("tests_passed") == total
    if success or info.get("own_correct"):
        return True
    from flexmg.envs.math import grade

    numbers = _NUMBER.findall(action)
    return bool(numbers) and grade("\\boxed{" + numbers[-1] + "}", task.answer) >= 1.0


def play(
    env_id: str,
    tasks: Sequence[Task],
    actor: Actor,
    greedy: bool,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    batch_size: int = 128,
) -> list[EpisodeOutcome]:
    """One episode of ``env_id`` per task (in order), all roles played by ``actor``."""
    import flexmg

    outcomes: list[EpisodeOutcome] = []
    for start in range(0, len(tasks), batch_size):
        chunk = tasks[start : start + batch_size]
        envs = [flexmg.make(env_id, split="eval", **dict(env_kwargs or {})) for _ in chunk]
        try:
            for i, (env, task) in enumerate(zip(envs, chunk, strict=True)):
                env.reset(seed=seed + start + i, options={"task": task})
            _run_lockstep(envs, actor, greedy)
            outcomes += [_outcome(env, task) for env, task in zip(envs, chunk, strict=True)]
        finally:
            for env in envs:
                env.close()
    return outcomes


def _run_lockstep(envs: Sequence[Any], actor: Actor, greedy: bool) -> None:
    """Step every env to its end, batching the observations of envs waiting on one role."""
    while True:
        waiting: dict[str, list[Any]] = {}
        for env in envs:
            if env.agents:
                waiting.setdefault(env.agent_selection, []).append(env)
        if not waiting:
            return
        for role, group in waiting.items():
            live, observations = [], []
            for env in group:
                obs, _, terminated, truncated, _ = env.last()
                if terminated or truncated:
                    env.step(None)
                else:
                    live.append(env)
                    observations.append(obs)
            if live:
                for env, action in zip(live, actor(role, observations, greedy), strict=True):
                    env.step(action)


def _outcome(env: Any, task: Task) -> EpisodeOutcome:
    metrics = env.episode_metrics
    graded = metrics.get("graded_role") or env.transcript[-1].role
    info = dict((metrics.get("per_role") or {}).get(graded) or {})
    action = next((r.action for r in reversed(env.transcript) if r.role == graded), "")
    success = bool(metrics.get("success"))
    format_ok = info.get("format_ok")
    if format_ok is None:
        format_ok = not info.get("format_error", True)
    return EpisodeOutcome(
        prompt=task.prompt,
        success=success,
        score=float(metrics.get("score", 0.0)),
        format_ok=bool(format_ok),
        correct=_answer_correct(task, action, info, success),
        rounds=int(metrics.get("rounds", 1)),
    )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``c`` successes in ``n`` samples (Chen et al., 2021)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def bootstrap_ci(
    values: Sequence[float], level: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of per-prompt ``values``.

    >>> bootstrap_ci([1.0] * 10)
    (1.0, 1.0)
    """
    if not values:
        raise ValueError("bootstrap_ci needs at least one value")
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    tail = (1.0 - level) / 2
    return means[int(tail * (resamples - 1))], means[int((1 - tail) * (resamples - 1))]


def summarize(
    greedy: Sequence[EpisodeOutcome], sampled: Sequence[Sequence[EpisodeOutcome]], k: int
) -> dict[str, Any]:
    """Per-prompt rates with 95% CIs: greedy and sampled success/format/correct, pass@k."""
    out: dict[str, Any] = {"prompts": len(greedy), "k": k}

    def add(name: str, per_prompt: list[float]) -> None:
        mean = sum(per_prompt) / len(per_prompt)
        out[name] = {
            "mean": round(mean, 4),
            "ci95": [round(x, 4) for x in bootstrap_ci(per_prompt)],
        }

    for key in ("success", "format_ok", "correct"):
        add(f"greedy_{key}", [float(getattr(o, key)) for o in greedy])
        if sampled:
            add(f"sampled_{key}", [sum(getattr(o, key) for o in s) / len(s) for s in sampled])
    for key in ("success", "correct"):
        if sampled:
            rates = [pass_at_k(len(s), sum(getattr(o, key) for o in s), k) for s in sampled]
            add(f"pass@{k}_{key}", rates)
    out["greedy_mean_score"] = round(sum(o.score for o in greedy) / len(greedy), 4)
    out["greedy_mean_rounds"] = round(sum(o.rounds for o in greedy) / len(greedy), 3)
    return out


def measure(
    env_id: str,
    actor: Actor,
    prompts: int = 300,
    k: int = 8,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Greedy and pass@k figures of ``actor`` on ``prompts`` distinct held-out prompts."""
    import flexmg

    probe = flexmg.make(env_id, split="eval", **dict(env_kwargs or {}))
    try:
        tasks = distinct_eval_tasks(probe, prompts)
    finally:
        probe.close()
    if progress:
        progress(f"{env_id}: {len(tasks)} distinct eval prompts; greedy")
    greedy = play(env_id, tasks, actor, greedy=True, seed=seed, env_kwargs=env_kwargs)
    sampled: list[list[EpisodeOutcome]] = [[] for _ in tasks]
    if k > 0:
        if progress:
            progress(f"{env_id}: {k} samples per prompt")
        repeated = [t for t in tasks for _ in range(k)]
        flat = play(env_id, repeated, actor, greedy=False, seed=seed, env_kwargs=env_kwargs)
        for i, outcome in enumerate(flat):
            sampled[i // k].append(outcome)
    return {"env": env_id, **summarize(greedy, sampled if k > 0 else [], k)}
