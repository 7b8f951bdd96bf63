"""A Gymnasium view of one role: the others are driven by given policies.

Example:
    >>> import flexmg
    >>> from flexmg.wrappers import SingleAgentEnv
    >>> env = SingleAgentEnv(flexmg.make("echo"), role="b",
    ...                      others={"a": lambda obs: obs["task"][5:]})
    >>> obs, info = env.reset(seed=0)
    >>> word = obs["context"].removeprefix("[a]: ")
    >>> obs, reward, terminated, truncated, info = env.step(word)
    >>> reward, terminated
    (1.0, True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from flexmg.env import FlexMGEnv
from flexmg.vector_base import EnvRunner

Policy = Callable[[dict[str, Any]], str]


def _as_policy(role: str, policy: Any) -> Policy:
    """Accept ``obs -> str`` callables and batch agents with ``act(list[obs]) -> list[str]``."""
    act = getattr(policy, "act", None)
    if callable(act):
        return lambda obs: act([obs])[0]
    if callable(policy):
        return policy
    raise TypeError(
        f"the policy for role {role!r} must be a callable obs -> str or an agent with "
        f"act(list[obs]) -> list[str], got {type(policy).__name__}"
    )


class SingleAgentEnv(gym.Env):
    """One role of a Flex-MG as a ``gymnasium.Env``.

    Args:
        env: the Flex-MG env.
        role: the role being learned.
        others: a policy for every other role (``obs -> str`` or an agent
            with ``act``).

    The reward of a step is the role's reward accumulated since its previous
    turn; the episode terminates/truncates as the Flex-MG does.
    """

    metadata = {"render_modes": ["human", "ansi"]}

    def __init__(self, env: FlexMGEnv, role: str, others: Mapping[str, Any]) -> None:
        if role not in env.possible_agents:
            raise ValueError(f"unknown role {role!r}; roles: {env.possible_agents}")
        missing = sorted(set(env.possible_agents) - {role} - set(others))
        if missing:
            raise ValueError(
                f"SingleAgentEnv needs a policy for every other role; missing {missing}"
            )
        self.env = env
        self.role = role
        self.others = {r: _as_policy(r, p) for r, p in others.items() if r != role}
        self.observation_space = env.observation_space(role)
        self.action_space = env.action_space(role)
        self.render_mode = env.render_mode
        self._runner = EnvRunner(env, 0)
        self._reward_so_far = 0.0

    def _advance(self) -> tuple[float, bool, bool]:
        """Play the other roles until it is ``role``'s turn or the episode ends.

        Returns ``role``'s reward since its previous turn and whether it is over.
        """
        runner = self._runner
        while (agent := runner.pending()) is not None and agent != self.role:
            runner.step(agent, self.others[agent](self.env.observe(agent)))
        total = runner.rewards.get(self.role, 0.0)
        reward, self._reward_so_far = total - self._reward_so_far, total
        if agent is None:
            terminated, truncated = runner.endings.get(self.role, (True, False))
            return reward, terminated, truncated
        return reward, False, False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._runner.reset(seed, options)
        self._reward_so_far = 0.0
        self._advance()
        return self.env.observe(self.role), dict(self.env.infos.get(self.role, {}))

    def step(self, action: str):
        if self._runner.pending() != self.role:
            raise RuntimeError("the episode is over: call reset()")
        self._runner.step(self.role, action)
        info = dict(self._runner.step_infos.get(self.role, {}))
        reward, terminated, truncated = self._advance()
        obs = self.env.observe(self.role)
        return obs, float(reward), bool(terminated), bool(truncated), info

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()
