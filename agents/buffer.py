"""Rollouts on a vector env and their conversion into PPO training samples.

:func:`collect_rollout` drives a ``flexmg`` vector env with a policy that has
``act(role, observations, greedy) -> ActionBatch`` (see ``agents/policy.py``),
remembers what was generated for every turn, and pairs it with the env's
transcript once all episodes end. Each turn becomes one :class:`Sample`.

Example (with any policy object honouring the ``act`` contract)::

    vec = flexmg.make_vec("math-2agent", num_envs=8, vectorization="sync", split="train")
    batch = collect_rollout(policy, vec, seed=0)
    batch.success_rate, len(batch.samples)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from flexmg.protocols import VectorEnv


class _ActionBatchLike(Protocol):
    texts: list[str]
    prompt_ids: list[list[int]]
    action_ids: list[list[int]]
    truncated: list[bool]
    sampler_logprobs: list[list[float]]
    token_logprobs: list[list[float]]
    values: list[float]
    token_values: list[list[float]]
    ref_token_logprobs: list[list[float]] | None


class _Actor(Protocol):
    def act(self, role: str, observations: list[dict], greedy: bool = False) -> Any: ...


@dataclass
class Sample:
    """One agent turn ready for PPO.

    The first block comes from the rollout (the env's transcript and the
    policy's ``act``: the rollout's scoring pass gives the *old* log-probs and
    values PPO uses), ``advantage``/``ret`` and their token versions come from
    the credit assignment.
    """

    episode: int
    turn: int
    role: str
    round: int
    prompt_ids: list[int]
    action_ids: list[int]
    truncated: bool
    reward: float
    team_reward: float
    last_in_round: bool
    sampler_logprobs: list[float] = field(default_factory=list)
    old_token_logprobs: list[float] = field(default_factory=list)
    old_value: float = 0.0
    old_token_values: list[float] = field(default_factory=list)
    ref_token_logprobs: list[float] | None = None
    advantage: float = 0.0
    ret: float = 0.0
    token_advantages: list[float] = field(default_factory=list)
    token_returns: list[float] = field(default_factory=list)


@dataclass
class RolloutBatch:
    """The result of one rollout: samples grouped by episode plus episode metrics."""

    episodes: list[list[Sample]]
    metrics: list[dict[str, Any]]

    @property
    def samples(self) -> list[Sample]:
        """All samples, episode by episode, turn by turn."""
        return [s for ep in self.episodes for s in ep]

    @property
    def success_rate(self) -> float:
        """Share of episodes whose metrics say ``success``."""
        if not self.metrics:
            return 0.0
        return sum(bool(m.get("success", False)) for m in self.metrics) / len(self.metrics)

    @property
    def mean_team_reward(self) -> float:
        """Mean episode team reward."""
        if not self.metrics:
            return 0.0
        return sum(_as_float(m.get("team_reward", 0.0)) for m in self.metrics) / len(self.metrics)

    def by_role(self) -> dict[str, list[Sample]]:
        """Samples grouped by role, in rollout order."""
        out: dict[str, list[Sample]] = {}
        for s in self.samples:
            out.setdefault(s.role, []).append(s)
        return out


def _as_float(x: Any) -> float:
    try:
        return float(x) if x is not None else 0.0
    except (TypeError, ValueError):
        return 0.0


def _get(record: Any, name: str, default: Any = None) -> Any:
    if isinstance(record, dict):
        return record.get(name, default)
    return getattr(record, name, default)


def collect_rollout(
    policy: _Actor, vec: VectorEnv, seed: int, greedy: bool = False, max_steps: int = 100_000
) -> RolloutBatch:
    """Play one batch of episodes on ``vec`` (one per env) and build samples.

    Args:
        policy: object with ``act(role, observations, greedy) -> ActionBatch``.
        vec: a flexmg vector env (``reset``, ``all_done``, ``next_role``,
            ``observe``, ``step``, ``episodes``).
        seed: ``vec.reset(seed=seed)``; env ``i`` gets ``seed + i``.
        greedy: greedy decoding (evaluation) instead of sampling.
        max_steps: guard against a vector env that never finishes.

    Returns:
        A :class:`RolloutBatch` with one sample per turn.
    """
    vec.reset(seed=seed)
    turns: dict[int, list[tuple[str, Any, int]]] = {}
    steps = 0
    while not vec.all_done():
        steps += 1
        if steps > max_steps:
            raise RuntimeError(
                f"vector env did not finish after {max_steps} role steps; "
                "check the env's horizon/termination"
            )
        role = vec.next_role()
        obs = vec.observe(role)
        waiting = [(i, o) for i, o in enumerate(obs) if o is not None]
        idx = [i for i, _ in waiting]
        if not idx:
            raise RuntimeError(
                f"vector env chose role {role!r} but no env is waiting on it (observe gave all None)"
            )
        batch = policy.act(role, [o for _, o in waiting], greedy=greedy)
        if len(batch.texts) != len(idx):
            raise RuntimeError(
                f"policy.act returned {len(batch.texts)} actions for {len(idx)} observations"
            )
        actions: list[str | None] = [None] * len(obs)
        for j, i in enumerate(idx):
            actions[i] = batch.texts[j]
            turns.setdefault(i, []).append((role, batch, j))
        vec.step(role, actions)
    results = vec.episodes()
    return build_batch(results, [turns.get(i, []) for i in range(len(results))])


def build_batch(
    results: Sequence[Any], turns: Sequence[Sequence[tuple[str, _ActionBatchLike, int]]]
) -> RolloutBatch:
    """Pair env transcripts with the generated turns ``(role, action batch, row)``, per env."""
    episodes: list[list[Sample]] = []
    metrics: list[dict[str, Any]] = []
    for e, (result, env_turns) in enumerate(zip(results, turns, strict=True)):
        transcript = list(_get(result, "transcript", []) or [])
        if len(transcript) != len(env_turns):
            raise RuntimeError(
                f"env {e}: transcript has {len(transcript)} turns but the policy acted "
                f"{len(env_turns)} times; the vector env and the rollout disagree"
            )
        samples: list[Sample] = []
        for t, (rec, (role, ab, j)) in enumerate(zip(transcript, env_turns, strict=True)):
            rec_role = _get(rec, "role")
            if rec_role != role:
                raise RuntimeError(
                    f"env {e}, turn {t}: transcript role {rec_role!r} != acting role {role!r}"
                )
            rnd = int(_get(rec, "round", 0) or 0)
            nxt_round = (
                int(_get(transcript[t + 1], "round", 0) or 0) if t + 1 < len(transcript) else None
            )
            samples.append(
                Sample(
                    episode=e,
                    turn=t,
                    role=role,
                    round=rnd,
                    prompt_ids=list(ab.prompt_ids[j]),
                    action_ids=list(ab.action_ids[j]),
                    truncated=bool(ab.truncated[j]),
                    reward=_as_float(_get(rec, "reward")),
                    team_reward=_as_float(_get(rec, "team_reward")),
                    last_in_round=nxt_round is None or nxt_round != rnd,
                    sampler_logprobs=list(ab.sampler_logprobs[j]),
                    old_token_logprobs=list(ab.token_logprobs[j]),
                    old_value=float(ab.values[j]),
                    old_token_values=list(ab.token_values[j]),
                    ref_token_logprobs=(
                        list(ab.ref_token_logprobs[j]) if ab.ref_token_logprobs else None
                    ),
                )
            )
        episodes.append(samples)
        metrics.append(_with_truncation(dict(_get(result, "metrics", {}) or {}), samples))
    return RolloutBatch(episodes=episodes, metrics=metrics)


def _with_truncation(metrics: dict[str, Any], samples: Sequence[Sample]) -> dict[str, Any]:
    """Flag actions cut at ``max_new_tokens``: ``truncated_actions`` and per role ``truncated``."""
    per_role = {
        r: dict(v) for r, v in (metrics.get("per_role") or {}).items() if isinstance(v, dict)
    }
    for s in samples:
        role = per_role.setdefault(s.role, {})
        role["truncated"] = bool(role.get("truncated", False)) or s.truncated
    metrics["per_role"] = per_role
    metrics["truncated_actions"] = sum(s.truncated for s in samples)
    return metrics
