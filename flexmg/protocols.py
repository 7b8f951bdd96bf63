"""Protocols at the seams: what an actor, a vector env, a credit function and a policy provide.

The episode driver (``flexmg.episodes``), the learner (``flexmg.agents``), the
leaderboard (``flexmg.baselines``) and user code meet at four seams. Each is a
:class:`typing.Protocol`, so any object with the right methods fits (no base
class to inherit), and a type checker verifies it statically. The module
imports neither torch nor numpy.

* :class:`Actor`: what plays a role (scripted agents, LLM agents, your own):
  one action per observation of a batch.
* :class:`VectorEnv`: ``flexmg.make_vec`` envs (sync, async, ray) as the
  episode driver steps them: one role at a time across a batch of envs.
* :class:`CreditFn`: an algorithm's credit assignment, episode samples to
  chains of (sample indices, rewards) for GAE (MARFT's chained credit, IPPO's
  per-role credit).
* :class:`Policy`: the team policy the PPO learner trains (generate for a
  role, re-evaluate stored actions with gradients).

Example:
    >>> import flexmg
    >>> from flexmg.protocols import VectorEnv
    >>> vec = flexmg.make_vec("echo", num_envs=2)
    >>> isinstance(vec, VectorEnv)  # runtime check: the methods are there
    True
    >>> vec.close()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["Actor", "Chain", "CreditFn", "Observation", "Policy", "VectorEnv"]

Chain = tuple[list[int], list[float]]
"""One chain of an episode: indices into its samples, in order, and the reward of each."""

Observation = dict[str, Any]
"""An env observation: ``task``, ``role``, ``instructions``, ``round``, ``context``, ``feedback``."""


@runtime_checkable
class Actor(Protocol):
    """What plays a role: ``act(observations) -> actions``, one ``str`` per observation, in order.

    Each observation names its ``role``; a batch may hold several roles (an actor
    that plays a whole team groups them). ``flexmg.actors.as_agent`` turns a function
    ``obs -> str`` into an actor.

    Example:
        >>> class Echo:
        ...     def act(self, observations):
        ...         return [o["task"] for o in observations]
        >>> isinstance(Echo(), Actor), Echo().act([{"task": "hi", "role": "a"}])
        (True, ['hi'])
    """

    def act(self, observations: Sequence[Observation]) -> list[str]:
        """One action (a whole message) per observation."""
        ...


@runtime_checkable
class VectorEnv(Protocol):
    """A batch of flexmg envs stepped one role at a time (``flexmg.make_vec``).

    The episode driver loops: ``reset(seed)``; while not ``all_done()``:
    ``role = next_role()``, ``obs = observe(role)`` (``None`` for envs not
    waiting on ``role``), ``step(role, actions)``; then ``episodes()``.

    Example:
        >>> import flexmg
        >>> vec = flexmg.make_vec("echo", num_envs=2)
        >>> vec.reset(seed=0)
        >>> while not vec.all_done():
        ...     role = vec.next_role()
        ...     done = vec.step(role, ["hi" if o else None for o in vec.observe(role)])
        >>> len(vec.episodes())
        2
        >>> vec.close()
    """

    num_envs: int
    possible_agents: list[str]

    def reset(self, seed: int | Sequence[int] | None = None, options: dict | None = None) -> None:
        """Reset every env (env ``i`` gets ``seed + i``, or ``seed[i]`` for a list)."""
        ...

    def pending_roles(self) -> list[str | None]:
        """The role each env waits on (``None`` for a finished env)."""
        ...

    def all_done(self) -> bool:
        """True when every env has finished its episode."""
        ...

    def next_role(self) -> str:
        """The role to step next (the one most unfinished envs wait on)."""
        ...

    def observe(self, role: str) -> list[dict | None]:
        """One observation per env: a dict where the env waits on ``role``, else ``None``."""
        ...

    def step(self, role: str, actions: Sequence[str | None]) -> Any:
        """Apply ``actions[i]`` where env ``i`` waits on ``role``; a bool array of finished envs."""
        ...

    def episodes(self) -> list[Any]:
        """The finished episode of every env (``flexmg.vector.EpisodeResult``), in env order."""
        ...

    def close(self) -> None:
        """Release the envs (worker processes for async and ray)."""
        ...


class CreditFn(Protocol):
    """Credit assignment: an episode's samples (in turn order) to chains for GAE.

    Every sample index appears in exactly one chain; GAE runs along each chain.
    Samples are the learner's (``flexmg.agents.samples.Sample``): a credit
    function reads fields such as ``role``, ``reward``, ``team_reward`` and
    ``last_in_round``.

    Example:
        >>> from types import SimpleNamespace as S
        >>> def per_role(episode):  # IPPO-style: one chain per role
        ...     chains = {}
        ...     for i, s in enumerate(episode):
        ...         idx, rew = chains.setdefault(s.role, ([], []))
        ...         idx.append(i)
        ...         rew.append(float(s.reward))
        ...     return list(chains.values())
        >>> credit: CreditFn = per_role
        >>> credit([S(role="a", reward=0.0), S(role="b", reward=1.0), S(role="a", reward=1.0)])
        [([0, 2], [0.0, 1.0]), ([1], [1.0])]
    """

    def __call__(self, episode: Sequence[Any], /) -> list[Chain]:
        """The chains of ``episode`` (its samples in turn order)."""
        ...


@runtime_checkable
class Policy(Protocol):
    """A team policy the PPO learner trains (``flexmg.agents.policy.TeamPolicy`` is one).

    Tensor-valued results are typed ``Any`` here so that this module stays
    torch-free; ``act`` returns an ``ActionBatch`` and ``evaluate`` an
    ``Evaluation`` (see ``flexmg.agents.policy``).
    """

    roles: list[str]
    config: Any
    """The policy's settings (the learner reads ``micro_batch`` from it)."""
    score_reference: bool
    """Whether ``act`` also scores the reference (base) model; a KL penalty's learner sets it."""

    def act(
        self, role: str, observations: Sequence[Mapping[str, Any]], greedy: bool = False
    ) -> Any:
        """Generate one action per observation with ``role``'s parameters (no gradients)."""
        ...

    def evaluate(
        self,
        role: str,
        prompt_ids: Sequence[Sequence[int]],
        action_ids: Sequence[Sequence[int]],
        with_entropy: bool = True,
        with_ref: bool = False,
        token_values: bool = True,
        critic_features: Any = None,
    ) -> Any:
        """Log-probs, entropies and values of stored actions (gradients flow).

        ``critic_features``, when the rollout's ``act`` returned them, lets the policy
        value the actions without running its critic's input again; the learner passes
        them only when every sample has them.
        """
        ...

    def score(
        self,
        role: str,
        prompt_ids: Sequence[Sequence[int]],
        action_ids: Sequence[Sequence[int]],
        with_ref: bool = False,
    ) -> Any:
        """Log-probs and values of stored actions under the current parameters (no gradients)."""
        ...

    def adapter_name(self, role: str) -> str:
        """The name of the trainable parameter group ``role`` acts with."""
        ...

    def critic_name(self, role: str) -> str:
        """The name of the value head that values ``role``'s turns."""
        ...

    def policy_parameters(self, role: str) -> list[Any]:
        """The trainable actor parameters of ``role``."""
        ...

    def critic_parameters(self, role: str | None = None) -> list[Any]:
        """The trainable critic parameters (of ``role``'s head, or all)."""
        ...

    def train(self, mode: bool = True) -> Any:
        """Switch to training mode (``torch.nn.Module.train``)."""
        ...

    def eval(self) -> Any:
        """Switch to evaluation mode (``torch.nn.Module.eval``)."""
        ...

    def trainable_state(self) -> dict[str, Any]:
        """What a checkpoint saves (adapters and value heads)."""
        ...

    def load_trainable_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`trainable_state` returned."""
        ...
