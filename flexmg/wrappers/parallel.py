"""Parallel (PettingZoo ``ParallelEnv``) views of a Flex-MG.

* :class:`TurnParallelEnv`: one parallel step = one turn. Every live role
  submits an action, only the role whose turn it is (``infos[role]["acting"]``)
  is applied; the others are ignored.
* :class:`LayeredParallelEnv`: one parallel step = one layer of the round's
  dependency graph: all roles of the layer act at once (none of them sees the
  others' output this round, so order inside a layer does not matter).

Both return observations, rewards and flags for every live role after each
step, and pass ``pettingzoo.test.parallel_api_test``.

Example:
    >>> import flexmg
    >>> from flexmg.wrappers import LayeredParallelEnv
    >>> env = LayeredParallelEnv(flexmg.make("echo"))
    >>> obs, infos = env.reset(seed=0)
    >>> sorted(r for r, i in infos.items() if i["acting"])
    ['a']
    >>> word = obs["a"]["task"][5:]
    >>> obs, rewards, terms, truncs, infos = env.step({"a": word, "b": ""})
    >>> obs, rewards, terms, truncs, infos = env.step({"a": "", "b": word})
    >>> rewards
    {'a': 1.0, 'b': 1.0}
"""

from __future__ import annotations

from typing import Any

from pettingzoo import ParallelEnv

from flexmg.env import FlexMGEnv


class _ParallelView(ParallelEnv):
    """Common machinery: drive the AEC env, collect rewards between parallel steps."""

    def __init__(self, env: FlexMGEnv) -> None:
        if not isinstance(env, FlexMGEnv):
            raise TypeError(f"expected a FlexMGEnv, got {type(env).__name__}")
        self.aec_env = env
        self.possible_agents = list(env.possible_agents)
        self.metadata = {**env.metadata, "is_parallelizable": True}
        self.render_mode = env.render_mode
        self.agents: list[str] = []

    def observation_space(self, agent: str):
        return self.aec_env.observation_space(agent)

    def action_space(self, agent: str):
        return self.aec_env.action_space(agent)

    @property
    def unwrapped(self) -> _ParallelView:
        return self

    def _acting(self) -> set[str]:
        raise NotImplementedError(f"{type(self).__name__} must implement _acting")

    def _infos(self, extra: dict[str, dict] | None = None) -> dict[str, dict]:
        env = self.aec_env
        acting = self._acting() if env.agents else set()
        infos = {}
        for a in self.agents:
            info = dict(extra.get(a, {}) if extra else env.infos.get(a, {}))
            info["acting"] = a in acting
            infos[a] = info
        return infos

    def reset(
        self, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[str, Any], dict[str, dict]]:
        self.aec_env.reset(seed=seed, options=options)
        self.agents = list(self.aec_env.agents)
        obs = {a: self.aec_env.observe(a) for a in self.agents}
        return obs, self._infos()

    def _apply(self, role: str, action: Any, rewards: dict[str, float]) -> None:
        env = self.aec_env
        env.step(action)
        for a, r in env.rewards.items():
            rewards[a] = rewards.get(a, 0.0) + r

    def step(self, actions: dict[str, Any]):
        env = self.aec_env
        if not env.agents:
            raise RuntimeError("the episode is over: call reset()")
        live = list(self.agents)
        rewards = {a: 0.0 for a in live}
        for role in self._order_of_acting():
            if role not in actions:
                raise KeyError(
                    f"no action for role {role!r}, whose turn it is; give actions for {sorted(self._acting())}"
                )
            self._apply(role, actions[role], rewards)
        terminations = {a: bool(env.terminations.get(a, False)) for a in live}
        truncations = {a: bool(env.truncations.get(a, False)) for a in live}
        infos_src = {a: env.infos.get(a, {}) for a in live}
        obs = {a: env.observe(a) for a in live}
        # drain PettingZoo dead steps so the AEC env is clean for the next reset
        while env.agents and (
            env.terminations[env.agent_selection] or env.truncations[env.agent_selection]
        ):
            env.step(None)
        self.agents = list(env.agents)
        infos = (
            self._infos(infos_src)
            if self.agents
            else {a: {**infos_src[a], "acting": False} for a in live}
        )
        return obs, rewards, terminations, truncations, infos

    def _order_of_acting(self) -> list[str]:
        raise NotImplementedError(f"{type(self).__name__} must implement _order_of_acting")

    def render(self) -> Any:
        return self.aec_env.render()

    def close(self) -> None:
        self.aec_env.close()

    def state(self) -> Any:
        raise NotImplementedError("Flex-MG envs have no global state array")


class TurnParallelEnv(_ParallelView):
    """Parallel view in which each step applies the action of the one role whose turn it is."""

    def _acting(self) -> set[str]:
        return {self.aec_env.agent_selection}

    def _order_of_acting(self) -> list[str]:
        return [self.aec_env.agent_selection]


class LayeredParallelEnv(_ParallelView):
    """Parallel view in which each step applies one layer of the round's dependency graph."""

    def _layer(self) -> list[str]:
        env = self.aec_env
        current = env.agent_selection
        for layer in env.graph.layers():
            if current in layer:
                return layer
        raise RuntimeError(f"role {current!r} is not in the round's graph")

    def _acting(self) -> set[str]:
        return set(self._layer())

    def _order_of_acting(self) -> list[str]:
        env = self.aec_env
        layer = set(self._layer())
        order = env.graph.order()
        start = order.index(env.agent_selection)
        return [r for r in order[start:] if r in layer]
