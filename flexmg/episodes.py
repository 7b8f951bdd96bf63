"""The one episode driver: play a batch of episodes on a vector env, one role at a time.

:func:`play_batch` resets a vector env and steps it until every env has
finished its episode, asking the team's actor of each role
(:class:`flexmg.protocols.Actor`) for the actions of that role's batch.
Everything that plays episodes goes through it (torch-free):

* :func:`rollout`: a team of agents (scripted, LLM, any ``act(list[obs])``)
  plays ``episodes`` episodes, batch after batch (leaderboards, examples);
* :func:`flexmg.evaluation.evaluate`: held-out episodes over seeds (training
  runs' evaluations, ``flexmg eval``, pass@k, the warm start's measurement);
* :func:`flexmg.agents.samples.collect_rollout`: a team policy plays one batch
  and each turn becomes a PPO sample (``on_step`` tells it which env each
  action was for).

Summaries of the episodes come from :func:`flexmg.metrics.summarize_episodes`.

Example:
    >>> import flexmg
    >>> echo = lambda obs: obs["task"][5:] if obs["role"] == "a" else obs["context"][5:]
    >>> result = rollout(flexmg.make("echo"), {"a": echo, "b": echo}, episodes=4, seed=0)
    >>> result.success_rate, result.summary()["episodes"]
    (1.0, 4)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flexmg.actors import team_of
from flexmg.env import FlexMGEnv
from flexmg.metrics import EpisodeSummary, summarize_episodes
from flexmg.protocols import Actor, VectorEnv
from flexmg.vector import EpisodeResult, SyncVectorEnv

__all__ = ["OnStep", "RolloutResult", "play_batch", "rollout"]

OnStep = Callable[[str, list[int], list[str]], None]
"""``on_step(role, envs, actions)``: after each role's step, the envs it acted in and what it said."""


def play_batch(
    vec: VectorEnv,
    team: Mapping[str, Any] | Any,
    seed: int | Sequence[int],
    *,
    options: dict[str, Any] | None = None,
    max_steps: int = 100_000,
    on_step: OnStep | None = None,
) -> list[EpisodeResult]:
    """Play one episode per env of ``vec`` (env ``i`` seeded ``seed + i`` or ``seed[i]``) to the end.

    Args:
        vec: a flexmg vector env (``flexmg.make_vec``).
        team: ``{role: actor}`` (actors or ``obs -> str`` functions), or one actor
            for every role; each step asks the acting role's actor for one action
            per env waiting on that role.
        seed: ``vec.reset(seed=seed)``.
        options: ``vec.reset(options=...)`` (e.g. ``{"task": task}``).
        max_steps: guard against a vector env that never finishes (role steps).
        on_step: called after each role step (see :data:`OnStep`).

    Returns:
        The finished episodes, in env order.

    >>> import flexmg
    >>> vec = flexmg.make_vec("echo", num_envs=2)
    >>> team = {"a": lambda obs: "up", "b": lambda obs: "down"}
    >>> [(ep.seed, ep.transcript[1].action, ep.success) for ep in play_batch(vec, team, seed=7)]
    [(7, 'down', False), (8, 'down', False)]
    >>> vec.close()
    """
    actors: dict[str, Actor] = team_of(team, vec.possible_agents)
    vec.reset(seed=seed, options=options)
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
        envs = [i for i, o in enumerate(obs) if o is not None]
        if not envs:
            raise RuntimeError(
                f"vector env chose role {role!r} but no env is waiting on it (observe gave all None)"
            )
        if role not in actors:
            raise KeyError(f"no agent for role {role!r}; team has {sorted(actors)}")
        acts = list(actors[role].act([o for o in obs if o is not None]))
        if len(acts) != len(envs):
            raise ValueError(
                f"the actor for {role!r} returned {len(acts)} actions for {len(envs)} observations"
            )
        actions: list[str | None] = [None] * vec.num_envs
        for i, a in zip(envs, acts):
            actions[i] = a
        vec.step(role, actions)
        if on_step is not None:
            on_step(role, envs, acts)
    return vec.episodes()


@dataclass
class RolloutResult:
    """Episodes played by :func:`rollout` and their summary."""

    episodes: list[EpisodeResult] = field(default_factory=list)

    def summarize(self) -> EpisodeSummary:
        """:func:`flexmg.metrics.summarize_episodes` of the episodes."""
        return summarize_episodes(e.metrics for e in self.episodes)

    @property
    def success_rate(self) -> float:
        """Share of episodes whose metrics say ``success``."""
        return self.summarize()["success_rate"]

    @property
    def mean_score(self) -> float:
        """Mean episode ``score``."""
        return self.summarize()["score"]

    def summary(self) -> dict[str, Any]:
        """``episodes``, ``success_rate``, ``mean_score``, ``mean_rounds`` and ``per_role``.

        ``per_role`` is, per role, the mean of every numeric metric over all episodes.
        """
        s = self.summarize()
        return {
            "episodes": s["episodes"],
            "success_rate": s["success_rate"],
            "mean_score": s["score"],
            "mean_rounds": s["rounds"],
            "per_role": s["role_means"],
        }


def rollout(
    env: FlexMGEnv | VectorEnv,
    team: Mapping[str, Any] | Any,
    episodes: int = 1,
    seed: int | Sequence[int] = 0,
    progress: bool = False,
) -> RolloutResult:
    """Play ``episodes`` episodes; episode ``k`` uses seed ``seed + k`` (or ``seed[k]``).

    Args:
        env: a Flex-MG env or a vector env (batched: each agent sees a batch).
        team: ``{role: agent}`` (agents or ``obs -> str`` callables), or one
            agent for every role.
        episodes: how many episodes to play.
        seed: the first episode's seed, or one seed per episode (a sequence of
            length ``episodes``; the last batch is padded with extra seeds whose
            episodes are dropped).
        progress: show a progress bar.
    """
    vec = env if isinstance(env, VectorEnv) else SyncVectorEnv([lambda: env])
    actors = team_of(team, vec.possible_agents)
    seeds = _episode_seeds(seed, episodes, vec.num_envs)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=episodes, desc="episodes", unit="ep")
    result = RolloutResult()
    for start in range(0, len(seeds), vec.num_envs):
        batch = play_batch(vec, actors, seeds[start : start + vec.num_envs])
        result.episodes.extend(batch[: episodes - len(result.episodes)])
        if bar is not None:
            bar.update(min(len(batch), bar.total - bar.n))
            bar.set_postfix(success=f"{result.success_rate:.2f}")
    if bar is not None:
        bar.close()
    return result


def _episode_seeds(seed: int | Sequence[int], episodes: int, batch: int) -> list[int]:
    """The seed of each episode, padded to whole batches of ``batch``.

    >>> _episode_seeds(10, 3, 2), _episode_seeds([5, 9, 2], 3, 2)
    ([10, 11, 12, 13], [5, 9, 2, 3])
    """
    if isinstance(seed, Sequence) and not isinstance(seed, str | bytes):
        seeds = [int(s) for s in seed]
        if len(seeds) != episodes:
            raise ValueError(
                f"rollout got {len(seeds)} seeds for {episodes} episodes: pass one seed per "
                "episode, or one int (episode k then uses seed + k)"
            )
    elif isinstance(seed, int) and not isinstance(seed, bool):
        seeds = [seed + k for k in range(episodes)]
    else:
        raise TypeError(f"seed must be an int or a sequence of ints, got {seed!r}")
    pad = -len(seeds) % batch
    return seeds + [seeds[-1] + 1 + k for k in range(pad)] if seeds else seeds
