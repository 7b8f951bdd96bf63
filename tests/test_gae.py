"""GAE for APPO/TPPO and the MARFT/IPPO credit structures, on hand-computed cases."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from flexmg.agents.credit import marft_credit
from flexmg.agents.gae import (
    assign_advantages,
    gae_chain,
    normalize_advantages,
    token_gae_chain,
)
from flexmg.agents.marft import get_algorithm
from flexmg.baselines.ippo import ippo_credit


def _episode(values, team_rewards, roles=("a", "b"), token_values=None):
    """2 roles x len(values)//2 rounds; team_rewards per round."""
    n = len(roles)
    out = []
    for k, v in enumerate(values):
        rnd, pos = divmod(k, n)
        out.append(
            SimpleNamespace(
                role=roles[pos],
                round=rnd,
                reward=team_rewards[rnd],
                team_reward=team_rewards[rnd],
                last_in_round=pos == n - 1,
                truncated=False,
                old_value=v,
                old_token_values=token_values[k] if token_values else [],
                advantage=None,
                ret=None,
                token_advantages=None,
                token_returns=None,
            )
        )
    return out


def test_gae_chain_hand_computed():
    adv, ret = gae_chain([0, 0, 0, 1], [0.5, 0.6, 0.7, 0.8], gamma=0.9, lam=0.8)
    assert adv == pytest.approx([0.1466176, 0.14808, 0.164, 0.2])
    assert ret == pytest.approx([0.6466176, 0.74808, 0.864, 1.0])


def test_gae_chain_lambda_one_is_discounted_return():
    adv, ret = gae_chain([1.0, 0.0, 2.0], [0.3, -1.0, 5.0], gamma=0.5, lam=1.0)
    assert ret == pytest.approx([1.0 + 0.25 * 2.0, 0.5 * 2.0, 2.0])


def test_gae_validates_inputs():
    with pytest.raises(ValueError, match="same length"):
        gae_chain([1.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="gamma"):
        gae_chain([1.0], [0.0], gamma=1.5)
    with pytest.raises(ValueError, match="no token values"):
        token_gae_chain([1.0], [[]])


def test_token_gae_hand_computed():
    adv, ret = token_gae_chain([1.0], [[0.2, 0.4]], gamma=1.0, lam=1.0, token_gamma=0.5)
    assert adv[0] == pytest.approx([0.3, 0.6])
    assert ret[0] == pytest.approx([0.5, 1.0])


@pytest.mark.parametrize("lam", [1.0, 0.95, 0.5])
def test_token_returns_equal_action_returns_with_token_discount_one(lam):
    rng = random.Random(0)
    for _ in range(20):
        n = rng.randint(1, 7)
        rewards = [rng.choice([0.0, 1.0, -0.5]) for _ in range(n)]
        values = [rng.uniform(-1, 1) for _ in range(n)]
        lengths = [rng.randint(1, 6) for _ in range(n)]
        adv, ret = gae_chain(rewards, values, gamma=0.99, lam=lam)
        tadv, tret = token_gae_chain(
            rewards,
            [[v] * length for v, length in zip(values, lengths, strict=True)],
            gamma=0.99,
            lam=lam,
            token_gamma=1.0,
        )
        for k in range(n):
            assert tret[k] == pytest.approx([ret[k]] * lengths[k])
            assert tadv[k] == pytest.approx([adv[k]] * lengths[k])


def test_marft_credit_chains_through_agents():
    ep = _episode([0.5, 0.6, 0.7, 0.8], [0.0, 1.0])
    assert marft_credit(ep) == [([0, 1, 2, 3], [0.0, 0.0, 0.0, 1.0])]
    assign_advantages([ep], marft_credit, gamma=0.9, lam=0.8)
    assert [s.advantage for s in ep] == pytest.approx([0.1466176, 0.14808, 0.164, 0.2])
    assert [s.ret for s in ep] == pytest.approx([0.6466176, 0.74808, 0.864, 1.0])


def test_ippo_credit_independent_per_role():
    ep = _episode([0.5, 0.6, 0.7, 0.8], [0.0, 1.0])
    assert ippo_credit(ep) == [([0, 2], [0.0, 1.0]), ([1, 3], [0.0, 1.0])]
    assign_advantages([ep], ippo_credit, gamma=0.9, lam=0.8)
    # role a: values .5,.7 -> A = [0.13 + 0.72*0.3, 0.3]; role b: values .6,.8
    assert [s.advantage for s in ep] == pytest.approx([0.346, 0.264, 0.3, 0.2])
    assert get_algorithm("ippo").critic == "per_role"


def test_with_critics_at_the_mean_return_marft_is_ippo_with_the_predecessor_scaled():
    """Why MARFT and IPPO update alike when the critics explain nothing (docs/collaboration.md).

    A critic with explained variance 0 predicts the mean of its target: IPPO's roles
    and MARFT's last role the mean return ``m``, MARFT's first role ``gamma * m``.
    Then, in one round, MARFT's advantages are IPPO's with the predecessor's scaled by
    ``gamma * lam``; normalising over the whole batch keeps that factor.
    """
    gamma, lam = 0.99, 0.95
    rng = random.Random(1)
    rewards = [float(rng.random() < 0.3) for _ in range(64)]
    m = sum(rewards) / len(rewards)
    marft = [_episode([gamma * m, m], [r]) for r in rewards]
    ippo = [_episode([m, m], [r]) for r in rewards]
    assign_advantages(marft, marft_credit, gamma=gamma, lam=lam)
    assign_advantages(ippo, ippo_credit, gamma=gamma, lam=lam)
    for em, ei in zip(marft, ippo, strict=True):
        assert em[0].advantage == pytest.approx(gamma * lam * ei[0].advantage)
        assert em[1].advantage == pytest.approx(ei[1].advantage)
    for batch in (marft, ippo):
        for s in (s for ep in batch for s in ep):
            s.token_advantages = []
        normalize_advantages([s for ep in batch for s in ep], "action")
    ratio = [em[0].advantage / ei[0].advantage for em, ei in zip(marft, ippo, strict=True)]
    assert max(ratio) == pytest.approx(min(ratio))  # one factor for the predecessor ...
    assert 0.9 < ratio[0] < 1.0  # ... slightly below 1: its step is a little smaller


def test_assign_advantages_token_level_and_empty_actions():
    ep = _episode([0.5, 0.6], [1.0], token_values=[[0.5, 0.5, 0.5], []])
    assign_advantages([ep], marft_credit, level="token", gamma=0.9, lam=0.8)
    act = _episode([0.5, 0.6], [1.0])
    assign_advantages([act], marft_credit, level="action", gamma=0.9, lam=0.8)
    assert ep[0].token_returns == pytest.approx([act[0].ret] * 3)
    assert ep[1].token_returns == pytest.approx([act[1].ret])  # empty action: one virtual token
    assert ep[0].advantage == pytest.approx(act[0].advantage)


def test_assign_advantages_rejects_bad_credit():
    ep = _episode([0.5, 0.6], [1.0])
    with pytest.raises(ValueError, match="exactly one chain"):
        assign_advantages([ep], lambda e: [([0], [1.0])])
    with pytest.raises(ValueError, match="level"):
        assign_advantages([ep], marft_credit, level="word")
    with pytest.raises(ValueError, match="unknown algorithm"):
        get_algorithm("nope")


def test_truncation_penalty_lowers_the_truncated_turns_reward():
    ep = _episode([0.0, 0.0], [1.0])
    ep[0].truncated = True
    assign_advantages([ep], marft_credit, gamma=1.0, lam=1.0, truncation_penalty=0.5)
    assert [s.ret for s in ep] == pytest.approx([0.5, 1.0])
