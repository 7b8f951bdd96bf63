"""A verl agent loop that plays a flexmg workflow turn by turn (registered as ``flexmg_agent``).

One dataset row (``flexmg export``, :mod:`flexmg.integrations.export`) is one episode. The loop
rebuilds the env from ``extra_info`` (env id, kwargs, seed) and walks its dependency
graph with the seat driver; every role's turn is generated through verl's server
manager (``self.server_manager.generate``, i.e. vLLM/SGLang in a real run), so all
roles share the one model being trained. The episode is packed into one token
trajectory:

* prompt = the first role's chat prompt (system = its instructions, user = the task);
* then, per turn: the role's sampled tokens (``response_mask`` 1) and, before every
  later turn, the next role's observation as a user message (env tokens,
  ``response_mask`` 0);
* ``reward_score`` = the team score (``reward="team"``) or one role's summed reward
  (``reward="<role>"``), placed by verl on the last response token.

With ``trained_roles`` unset every role's tokens are trainable: verl's critic and
token-level GAE over this trajectory are token-level MARFT with one model shared by
all roles (docs/integrations/verl.md). ``trained_roles=[...]`` masks the other roles'
tokens out of the loss (they still condition the trajectory). The role of each
token span is reported in ``extra_fields["role_spans"]`` (``[role, start, end)`` in
response positions) for per-role credit.

Options come from the agent loop's YAML entry (``rollout.agent.agent_loop_config_path``)::

    - name: flexmg_agent
      _target_: flexmg.integrations.verl.agent_loop.FlexMGAgentLoop
      reward: team            # or a role name
      trained_roles: null     # or e.g. [solver]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopOutput,
    _agent_loop_registry,
)
from verl.utils.profiler import simple_timer

import flexmg
from flexmg.integrations.export import DEFAULT_AGENT_NAME
from flexmg.integrations.seats import SeatDriver, observation_to_messages
from flexmg.integrations.verl.reward import parse_env_kwargs

__all__ = ["FlexMGAgentLoop"]


class _Packed:
    """The growing token trajectory of one episode."""

    def __init__(self, prompt_ids: list[int], messages: list[dict[str, str]]) -> None:
        self.ids = list(prompt_ids)
        self.prompt_len = len(prompt_ids)
        self.messages = list(messages)
        self.mask: list[int] = []
        self.logprobs: list[float] = []
        self.role_spans: list[list[Any]] = []

    @property
    def response_len(self) -> int:
        return len(self.ids) - self.prompt_len


class FlexMGAgentLoop(AgentLoopBase):
    """Plays one flexmg episode per dataset row through verl's server manager.

    Args:
        reward: ``"team"`` (the env's team score) or a role name (that role's reward).
        trained_roles: roles whose tokens are trainable; ``None`` = every role.
    """

    def __init__(
        self,
        *args: Any,
        reward: str = "team",
        trained_roles: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if not isinstance(reward, str) or not reward:
            raise ValueError(f"reward must be 'team' or a role name, got {reward!r}")
        self.reward = reward
        self.trained_roles = None if trained_roles is None else {str(r) for r in trained_roles}
        self.response_length = int(self.rollout_config.response_length)

    def _episode(self, kwargs: dict[str, Any]) -> SeatDriver:
        info = dict(kwargs.get("extra_info") or {})
        env_id = info.get("env_id") or kwargs.get("data_source")
        if not env_id or info.get("seed") is None:
            raise ValueError(
                "a flexmg_agent row needs extra_info with env_id and seed (export the data "
                f"with `flexmg export ... --format parquet`); got {sorted(info)}"
            )
        env = flexmg.make(str(env_id), **parse_env_kwargs(info.get("env_kwargs")))
        roles = list(env.possible_agents)
        unknown = sorted((self.trained_roles or set()) - set(roles))
        if self.reward != "team" and self.reward not in roles:
            unknown.append(f"reward={self.reward}")
        if unknown:
            env.close()
            raise ValueError(f"{unknown} are not roles of {env_id}: {roles}")
        return SeatDriver(env, str(env_id), int(info["seed"]))

    async def _generate(
        self, packed: _Packed, sampling_params: dict[str, Any], request_id: str, metrics: dict
    ) -> list[int]:
        budget = self.response_length - packed.response_len
        params = dict(sampling_params)
        params["max_tokens"] = max(1, min(int(params.get("max_tokens", budget)), budget))
        with simple_timer("generate_sequences", metrics):
            output = await self.server_manager.generate(
                request_id=request_id, prompt_ids=packed.ids, sampling_params=params
            )
        token_ids = list(output.token_ids)[:budget]
        logprobs = list(output.log_probs)[:budget] if output.log_probs else None
        merge, mask, logprobs_all = await self.ct_merge_assistant_token(
            packed.ids,
            token_ids,
            packed.mask,
            packed.logprobs if logprobs is not None else None,
            assistant_logprobs=logprobs,
        )
        packed.ids, packed.mask = merge.token_ids, mask
        if logprobs_all is not None:
            packed.logprobs = logprobs_all
        return token_ids

    async def _append_observation(self, packed: _Packed, obs: dict[str, Any], reply: str) -> None:
        # The reply's tokens are already in the trajectory: only the observation is new.
        previous = [*packed.messages, {"role": "assistant", "content": reply}]
        packed.messages = [*previous, observation_to_messages(obs, system=False)[0]]
        merge, mask, logprobs = await self.ct_merge_context_msg(
            previous,
            packed.messages,
            packed.ids,
            packed.mask,
            packed.logprobs if packed.logprobs else None,
        )
        packed.ids, packed.mask = merge.token_ids, mask
        if packed.logprobs:
            packed.logprobs = logprobs or []

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """Play the row's episode, generating every role's turns into one token sequence.

        Args:
            sampling_params: verl's sampling parameters (``max_tokens`` is capped per turn).
            **kwargs: the dataset row; ``extra_info`` holds ``env_id``, ``seed``, ``env_kwargs``.

        Returns:
            The prompt and response tokens (cut to ``response_length``), the ``reward``
            score, and ``role_spans``, role rewards, team score and truncation in
            ``extra_fields``.
        """
        driver = self._episode(kwargs)
        metrics: dict[str, Any] = {}
        request_id = uuid4().hex
        try:
            turn = driver.pending()
            assert turn is not None, "a fresh episode always has a role to act"
            prompt_ids = await self.ct_build_initial_tokens(turn[1])
            packed = _Packed(prompt_ids, turn[1])
            truncated = False
            while turn is not None:
                role = turn[0]
                if truncated or packed.response_len >= self.response_length:
                    truncated = True  # no room left: the remaining roles say nothing
                    driver.act("")
                    turn = driver.pending()
                    continue
                start = packed.response_len
                token_ids = await self._generate(packed, sampling_params, request_id, metrics)
                if self.trained_roles is not None and role not in self.trained_roles:
                    packed.mask[start:] = [0] * (len(packed.mask) - start)
                packed.role_spans.append([role, start, packed.response_len])
                text = self.tokenizer.decode(token_ids, skip_special_tokens=True)
                driver.act(text)
                turn = driver.pending()
                if turn is not None and packed.response_len < self.response_length:
                    obs = driver.observation
                    assert obs is not None, "pending() keeps the observation of the turn it returns"
                    await self._append_observation(packed, obs, text)
        finally:
            driver.env.close()
        result = driver.result
        score = result.score if self.reward == "team" else result.rewards[self.reward]
        n = self.response_length
        response_ids = packed.ids[packed.prompt_len :]
        output = AgentLoopOutput(
            prompt_ids=packed.ids[: packed.prompt_len],
            response_ids=response_ids[:n],
            response_mask=packed.mask[:n],
            response_logprobs=packed.logprobs[:n] if packed.logprobs else None,
            reward_score=float(score),
            num_turns=1 + 2 * len(result.segments),
            metrics=metrics,
            extra_fields={},
        )
        output.extra_fields.update(
            {
                "role_spans": packed.role_spans,
                "role_rewards": json.dumps(result.rewards, sort_keys=True),
                "team_score": float(result.score),
                "truncated": truncated,
                "turn_scores": [],
                "tool_rewards": [],
            }
        )
        return output


# Register the loop under its default name only when no entry exists. verl loads the YAML
# (``agent_loop_config_path``, with ``reward``/``trained_roles``) into its registry before it
# first instantiates the loop, and that instantiation imports this module: verl's own
# ``@register`` would then replace the YAML's entry, and every later episode of the worker
# would run with the defaults.
_agent_loop_registry.setdefault(
    DEFAULT_AGENT_NAME, {"_target_": f"{FlexMGAgentLoop.__module__}.FlexMGAgentLoop"}
)
