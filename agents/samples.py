"""A team policy's rollout on a vector env, turned into PPO training samples.

:func:`collect_rollout` plays one batch of episodes with the episode driver
(:func:`flexmg.episodes.play_batch`) and a policy that has
``act(role, observations, greedy) -> ActionBatch`` (see ``agents/policy.py``):
each role's actor is the policy acting with that role's parameters, and it
remembers what it generated, which the driver's ``on_step`` pairs with the envs
acted in; once all episodes end each turn is matched to the env's transcript
(:func:`build_batch`). Each turn becomes one
:class:`Sample`; a :class:`RolloutBatch` holds them with the episodes' metrics.

Example (with any policy object honouring the ``act`` contract)::

    vec = flexmg.make_vec("math-2agent", num_envs=8, vectorization="sync", split="train")
    batch = collect_rollout(policy, vec, seed=0)
    batch.success_rate, len(batch.samples)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from flexmg.episodes import play_batch
from flexmg.metrics import summarize_episodes
from flexmg.protocols import VectorEnv
from flexmg.vector import EpisodeResult


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
    critic_features: list[Any] | None


class _Policy(Protocol):
    def act(self, role: str, observations: list[dict], greedy: bool = False) -> Any: ...


class _RoleTurns:
    """The policy acting as one role's actor; it keeps each batch it generated, in order."""

    def __init__(self, policy: _Policy, role: str, greedy: bool) -> None:
        self.policy, self.role, self.greedy = policy, role, greedy
        self.batches: list[_ActionBatchLike] = []

    def act(self, observations: Sequence[dict]) -> list[str]:
        batch = self.policy.act(self.role, list(observations), greedy=self.greedy)
        self.batches.append(batch)
        return list(batch.texts)


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
    critic_features: Any = None
    advantage: float = 0.0
    ret: float = 0.0
    token_advantages: list[float] = field(default_factory=list)
    token_returns: list[float] = field(default_factory=list)


@dataclass
class RolloutBatch:
    """The result of one rollout: samples grouped by episode plus episode metrics.

    ``results`` are the env's finished episodes (transcripts, tasks), one per entry of
    ``episodes``, when the batch was played here (:func:`collect_rollout`).
    """

    episodes: list[list[Sample]]
    metrics: list[dict[str, Any]]
    results: list[EpisodeResult] = field(default_factory=list)

    @property
    def samples(self) -> list[Sample]:
        """All samples, episode by episode, turn by turn."""
        return [s for ep in self.episodes for s in ep]

    @property
    def success_rate(self) -> float:
        """Share of episodes whose metrics say ``success``."""
        return summarize_episodes(self.metrics)["success_rate"]

    @property
    def mean_team_reward(self) -> float:
        """Mean episode team reward."""
        return summarize_episodes(self.metrics)["team_reward"]

    def by_role(self) -> dict[str, list[Sample]]:
        """Samples grouped by role, in rollout order."""
        out: dict[str, list[Sample]] = {}
        for s in self.samples:
            out.setdefault(s.role, []).append(s)
        return out


def collect_rollout(
    policy: _Policy,
    vec: VectorEnv,
    seed: int | Sequence[int],
    greedy: bool = False,
    max_steps: int = 100_000,
) -> RolloutBatch:
    """Play one batch of episodes on ``vec`` (one per env) and build samples.

    Args:
        policy: object with ``act(role, observations, greedy) -> ActionBatch``.
        vec: a flexmg vector env (``reset``, ``all_done``, ``next_role``,
            ``observe``, ``step``, ``episodes``).
        seed: ``vec.reset(seed=seed)``; env ``i`` gets ``seed + i`` (or ``seed[i]``).
        greedy: greedy decoding (evaluation) instead of sampling.
        max_steps: guard against a vector env that never finishes.

    Returns:
        A :class:`RolloutBatch` with one sample per turn.
    """
    team = {role: _RoleTurns(policy, role, greedy) for role in vec.possible_agents}
    turns: dict[int, list[tuple[str, _ActionBatchLike, int]]] = {}

    def on_step(role: str, envs: list[int], actions: list[str]) -> None:
        batch = team[role].batches[-1]
        for j, i in enumerate(envs):
            turns.setdefault(i, []).append((role, batch, j))

    results = play_batch(vec, team, seed, max_steps=max_steps, on_step=on_step)
    return build_batch(results, [turns.get(i, []) for i in range(len(results))])


def build_batch(
    results: Sequence[EpisodeResult],
    turns: Sequence[Sequence[tuple[str, _ActionBatchLike, int]]],
) -> RolloutBatch:
    """Pair env transcripts with the generated turns ``(role, action batch, row)``, per env."""
    episodes: list[list[Sample]] = []
    metrics: list[dict[str, Any]] = []
    for e, (result, env_turns) in enumerate(zip(results, turns, strict=True)):
        transcript = result.transcript
        if len(transcript) != len(env_turns):
            raise RuntimeError(
                f"env {e}: transcript has {len(transcript)} turns but the policy acted "
                f"{len(env_turns)} times; the vector env and the rollout disagree"
            )
        samples: list[Sample] = []
        for t, (rec, (role, ab, j)) in enumerate(zip(transcript, env_turns, strict=True)):
            if rec.role != role:
                raise RuntimeError(
                    f"env {e}, turn {t}: transcript role {rec.role!r} != acting role {role!r}"
                )
            rnd = int(rec.round)
            nxt_round = int(transcript[t + 1].round) if t + 1 < len(transcript) else None
            samples.append(
                Sample(
                    episode=e,
                    turn=t,
                    role=role,
                    round=rnd,
                    prompt_ids=list(ab.prompt_ids[j]),
                    action_ids=list(ab.action_ids[j]),
                    truncated=bool(ab.truncated[j]),
                    reward=float(rec.reward),
                    team_reward=float(rec.team_reward),
                    last_in_round=nxt_round is None or nxt_round != rnd,
                    sampler_logprobs=list(ab.sampler_logprobs[j]),
                    old_token_logprobs=list(ab.token_logprobs[j]),
                    old_value=float(ab.values[j]),
                    old_token_values=list(ab.token_values[j]),
                    ref_token_logprobs=(
                        list(ab.ref_token_logprobs[j]) if ab.ref_token_logprobs else None
                    ),
                    critic_features=_feature_row(ab, j),
                )
            )
        episodes.append(samples)
        metrics.append(_with_truncation(dict(result.metrics), samples))
    return RolloutBatch(episodes=episodes, metrics=metrics, results=list(results))


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


def _feature_row(batch: Any, j: int) -> Any:
    """Row ``j`` of a batch's cached critic features, or None when it has none."""
    features = getattr(batch, "critic_features", None)
    return None if features is None else features[j]
