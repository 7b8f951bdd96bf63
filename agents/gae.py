"""Advantage and return computation for action-level (APPO) and token-level (TPPO) PPO.

A *chain* is the ordered list of steps over which one value function bootstraps:
for MARFT it is every turn of an episode in graph order (agents within a round,
then rounds); for IPPO it is one role's turns across rounds. The chain always
ends at the end of the episode (terminal: nothing is bootstrapped after it).

Action level, for step k of a chain with reward ``r_k`` and value ``V_k``::

    delta_k = r_k + gamma * V_{k+1} - V_k          (V after the last step = 0)
    A_k     = delta_k + gamma * lam * A_{k+1}

Token level, each step is an action of ``L_k`` tokens with per-token values.
Inside an action ``delta = token_gamma * V_{j+1} - V_j`` (no reward); at the
last token ``delta = r_k + gamma * V(first token of step k+1) - V_last``. Inside
an action the GAE factor is ``token_gamma * token_lam``; between actions it is
``gamma * lam``. With ``token_gamma = token_lam = 1`` and every token value of
an action equal to the action's value, token-level returns equal action-level
returns (the MARFT property; see ``tests/test_gae.py``).

Example:
    >>> adv, ret = gae_chain([0.0, 1.0], [0.5, 0.5], gamma=1.0, lam=1.0)
    >>> [round(a, 3) for a in adv], [round(r, 3) for r in ret]
    ([0.5, 0.5], [1.0, 1.0])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flexmg.protocols import CreditFn


def _check_unit(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")


def gae_chain(
    rewards: Sequence[float],
    values: Sequence[float],
    gamma: float = 0.99,
    lam: float = 0.95,
) -> tuple[list[float], list[float]]:
    """Action-level GAE along one terminal chain.

    Args:
        rewards: reward of each step, in chain order.
        values: critic value of each step's observation, same length.
        gamma: discount between consecutive steps (agents and rounds alike).
        lam: GAE lambda.

    Returns:
        ``(advantages, returns)`` with ``returns[k] = advantages[k] + values[k]``.

    >>> gae_chain([1.0], [0.25], gamma=0.9, lam=0.9)
    ([0.75], [1.0])
    """
    if len(rewards) != len(values):
        raise ValueError(
            f"rewards and values must have the same length, got {len(rewards)} and {len(values)}"
        )
    _check_unit("gamma", gamma)
    _check_unit("lam", lam)
    n = len(rewards)
    adv = [0.0] * n
    next_value = 0.0
    running = 0.0
    for k in range(n - 1, -1, -1):
        delta = float(rewards[k]) + gamma * next_value - float(values[k])
        running = delta + gamma * lam * running
        adv[k] = running
        next_value = float(values[k])
    returns = [a + float(v) for a, v in zip(adv, values, strict=True)]
    return adv, returns


def token_gae_chain(
    rewards: Sequence[float],
    token_values: Sequence[Sequence[float]],
    gamma: float = 0.99,
    lam: float = 0.95,
    token_gamma: float = 1.0,
    token_lam: float = 1.0,
) -> tuple[list[list[float]], list[list[float]]]:
    """Token-level GAE along one terminal chain of actions.

    Args:
        rewards: reward of each action (step), in chain order.
        token_values: for each action, the values of its tokens (at least one
            each: give an empty action one entry, its action-level value).
        gamma, lam: discount and GAE lambda between actions.
        token_gamma, token_lam: discount and GAE lambda between tokens of one action.

    Returns:
        ``(advantages, returns)``: per action, one float per token.

    >>> adv, ret = token_gae_chain([1.0], [[0.5, 0.5]], gamma=1.0, lam=1.0)
    >>> adv, ret
    ([[0.5, 0.5]], [[1.0, 1.0]])
    """
    _check_token_chain(rewards, token_values, gamma, lam, token_gamma, token_lam)
    n = len(rewards)
    advs: list[list[float]] = [[] for _ in range(n)]
    next_first_value = 0.0  # value of the first token of the next action (0 after the end)
    running = 0.0  # advantage of the token after the current one
    for k in range(n - 1, -1, -1):
        vals = [float(v) for v in token_values[k]]
        advs[k], running = _action_token_gae(
            float(rewards[k]), vals, next_first_value, running, gamma, lam, token_gamma, token_lam
        )
        next_first_value = vals[0]
    rets = [
        [a + float(v) for a, v in zip(adv, tv, strict=True)]
        for adv, tv in zip(advs, token_values, strict=True)
    ]
    return advs, rets


def _check_token_chain(
    rewards: Sequence[float],
    token_values: Sequence[Sequence[float]],
    gamma: float,
    lam: float,
    token_gamma: float,
    token_lam: float,
) -> None:
    """Refuse mismatched lengths, an action without token values or a factor outside [0, 1]."""
    if len(rewards) != len(token_values):
        raise ValueError(
            "rewards and token_values must have the same length (one entry per action), "
            f"got {len(rewards)} and {len(token_values)}"
        )
    for k, tv in enumerate(token_values):
        if len(tv) == 0:
            raise ValueError(
                f"action {k} has no token values; give an empty action one entry "
                "(its action-level value)"
            )
    for name, value in (
        ("gamma", gamma),
        ("lam", lam),
        ("token_gamma", token_gamma),
        ("token_lam", token_lam),
    ):
        _check_unit(name, value)


def _action_token_gae(
    reward: float,
    vals: list[float],
    next_first_value: float,
    running: float,
    gamma: float,
    lam: float,
    token_gamma: float,
    token_lam: float,
) -> tuple[list[float], float]:
    """One action's token advantages, last token first; returns them and the running GAE."""
    length = len(vals)
    out = [0.0] * length
    # last token of the action: reward + bootstrap from the next action
    delta = reward + gamma * next_first_value - vals[-1]
    running = delta + gamma * lam * running
    out[-1] = running
    for j in range(length - 2, -1, -1):
        delta = token_gamma * vals[j + 1] - vals[j]
        running = delta + token_gamma * token_lam * running
        out[j] = running
    return out, running


def assign_advantages(
    episodes: Sequence[Sequence[Any]],
    credit: CreditFn,
    level: str = "action",
    gamma: float = 0.99,
    lam: float = 0.95,
    token_gamma: float = 1.0,
    token_lam: float = 1.0,
    truncation_penalty: float = 0.0,
) -> None:
    """Fill ``advantage``/``ret`` (and the token versions) of every sample in place.

    Args:
        episodes: per episode, its samples (``agents.samples.Sample``) with
            ``old_value`` and, for ``level="token"``, ``old_token_values`` set.
        credit: maps an episode's samples to its chains (who bootstraps from
            whom, with which reward): MARFT chains all agents in graph order,
            IPPO keeps one chain per role.
        level: ``"action"`` (APPO) or ``"token"`` (TPPO).
        truncation_penalty: subtracted from the reward of every turn whose
            action was cut at ``max_new_tokens`` (``sample.truncated``).

    Every sample must belong to exactly one chain.
    """
    if level not in ("action", "token"):
        raise ValueError(f"level must be 'action' or 'token', got {level!r}")
    for e, episode in enumerate(episodes):
        seen = [0] * len(episode)
        for indices, rewards in credit(episode):
            if len(indices) != len(rewards):
                raise ValueError(
                    f"episode {e}: a chain has {len(indices)} steps, {len(rewards)} rewards"
                )
            for i in indices:
                seen[i] += 1
            steps = [episode[i] for i in indices]
            if truncation_penalty:
                rewards = [
                    float(r) - truncation_penalty * bool(s.truncated)
                    for r, s in zip(rewards, steps, strict=True)
                ]
            if level == "action":
                adv, ret = gae_chain(rewards, [s.old_value for s in steps], gamma, lam)
                for s, a, r in zip(steps, adv, ret, strict=True):
                    s.advantage, s.ret = a, r
            else:
                tvals = [list(s.old_token_values) or [s.old_value] for s in steps]
                tadv, tret = token_gae_chain(rewards, tvals, gamma, lam, token_gamma, token_lam)
                for s, ta, tr in zip(steps, tadv, tret, strict=True):
                    s.token_advantages, s.token_returns = ta, tr
                    s.advantage, s.ret = ta[0], tr[0]
        if any(c != 1 for c in seen):
            raise ValueError(
                f"episode {e}: credit assignment must put every turn in exactly one chain, "
                f"got counts {seen}"
            )


def normalize_advantages(samples: Sequence[Any], level: str, normalize: bool = True) -> float:
    """Normalise the advantages of ``samples`` in place (over actions or tokens).

    Returns the raw mean. Nothing changes with fewer than two values or when
    ``normalize`` is False.
    """
    import torch  # the learner's; the rest of this module is plain Python

    if level == "action":
        values = [s.advantage for s in samples]
    else:
        values = [a for s in samples for a in s.token_advantages[: max(len(s.action_ids), 1)]]
    adv = torch.tensor(values, dtype=torch.float64)
    raw_mean = float(adv.mean()) if adv.numel() else 0.0
    if normalize and adv.numel() > 1:
        mean, std = raw_mean, float(adv.std())
        for s in samples:
            s.advantage = (s.advantage - mean) / (std + 1e-8)
            s.token_advantages = [(a - mean) / (std + 1e-8) for a in s.token_advantages]
    return raw_mean
