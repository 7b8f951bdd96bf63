""":class:`LLMAgent`: a team policy (or a model by name) as an actor.

It groups each batch of observations by role and generates each group with
that role's parameters (``policy.act(role, observations, greedy)``); the class
docstring has a runnable example. Evaluations, leaderboards and ``flexmg eval``
play a policy through it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flexmg.models.prompts import _field

if TYPE_CHECKING:  # pragma: no cover
    from flexmg.agents.policy import TeamPolicy

__all__ = ["LLMAgent"]


class LLMAgent:
    """An agent (``act(observations) -> list[str]``) backed by a causal LM.

    Wraps either a team policy (a :class:`~flexmg.agents.policy.TeamPolicy`, or
    anything with ``act(role, observations, greedy)``: observations are grouped by
    their ``role`` and each group is generated with that role's parameters) or a
    model by name, loaded into a one-role ``TeamPolicy`` whose adapter starts as
    the identity (LoRA B = 0), so its outputs are the base model's.

    Args:
        model: a team policy, or ``"tiny"`` / a zoo name / a HF model name or local path.
        role: the role to use when an observation carries none (and the role of
            the policy built from a model name).
        greedy: greedy decoding instead of sampling.
        **policy_kwargs: extra :class:`~flexmg.agents.policy.PolicyConfig`
            fields when ``model`` is a name (e.g. ``max_new_tokens=256``).

    Example:
        >>> agent = LLMAgent("tiny", role="solver", greedy=True)
        >>> out = agent.act([{"task": "What is 2 + 3?", "role": "solver"}])
        >>> isinstance(out[0], str)
        True
    """

    def __init__(
        self,
        model: TeamPolicy | str,
        role: str = "solver",
        greedy: bool = False,
        **policy_kwargs: Any,
    ) -> None:
        from flexmg.agents.policy import PolicyConfig, TeamPolicy

        if not isinstance(model, str) and callable(getattr(model, "act", None)):
            if policy_kwargs:
                raise TypeError(
                    "policy_kwargs only apply when LLMAgent builds the policy from a model "
                    f"name; got a TeamPolicy and {sorted(policy_kwargs)}"
                )
            self.policy = model
        elif isinstance(model, str):
            self.policy = TeamPolicy([role], PolicyConfig(model=model, **policy_kwargs))
        else:
            raise TypeError(
                "LLMAgent(model=...) expects a team policy (act(role, observations, greedy)) "
                f"or a model name/path str, got {type(model).__name__}"
            )
        self.role = role
        self.greedy = greedy

    @property
    def deterministic(self) -> bool:
        """True when it acts the same on the same observation (greedy decoding)."""
        return self.greedy

    def _role_of(self, obs: Mapping[str, Any]) -> str:
        role = _field(obs, "role") or self.role
        roles = getattr(self.policy, "roles", None)
        if roles is None or role in roles:
            return role
        if self.role in roles:
            return self.role
        return str(roles[0])

    def act(self, observations: Sequence[Mapping[str, Any]]) -> list[str]:
        """One action (a whole message) per observation, in order."""
        if isinstance(observations, Mapping):
            raise TypeError("LLMAgent.act expects a list of observation dicts, got one dict")
        obs_list = list(observations)
        out: list[str] = [""] * len(obs_list)
        groups: dict[str, list[int]] = {}
        for i, obs in enumerate(obs_list):
            if not isinstance(obs, Mapping):
                raise TypeError(
                    f"observation {i} must be a dict (the env's observation), "
                    f"got {type(obs).__name__}"
                )
            groups.setdefault(self._role_of(obs), []).append(i)
        for role, idx in groups.items():
            batch = self.policy.act(role, [dict(obs_list[i]) for i in idx], greedy=self.greedy)
            for i, text in zip(idx, batch.texts, strict=True):
                out[i] = text
        return out

    def __call__(self, obs: Mapping[str, Any]) -> str:
        """Act on a single observation."""
        return self.act([obs])[0]
