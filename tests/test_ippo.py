"""IPPO: independent per-role credit and critics, plugged into the shared PPO machinery."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from flexmg.agents.gae import assign_advantages
from flexmg.agents.marft import MARFT, get_algorithm
from flexmg.agents.ppo import PPOConfig, PPOLearner
from flexmg.baselines.ippo import IPPO, ippo_credit


def _turn(role, rnd, pos, reward, value, last):
    return SimpleNamespace(role=role, round=rnd, position=pos, reward=reward, team_reward=reward,
                           last_in_round=last, old_value=value, old_token_values=[])  # fmt: skip


def test_ippo_chains_skip_successors_across_rounds():
    # 3 roles x 2 rounds; the team fails round 0 (reward 0) and succeeds in round 1
    ep = [
        _turn(r, rnd, p, float(rnd), 0.1 * (3 * rnd + p), p == 2)
        for rnd in range(2)
        for p, r in enumerate(["planner", "solver", "verifier"])
    ]
    chains = ippo_credit(ep)
    assert chains == [([0, 3], [0.0, 1.0]), ([1, 4], [0.0, 1.0]), ([2, 5], [0.0, 1.0])]
    assign_advantages([ep], ippo_credit, gamma=0.5, lam=1.0)
    # planner: V = 0.0, 0.3 -> A1 = 1 - 0.3, A0 = 0 + 0.5 * 0.3 - 0.0 + 0.5 * 0.7
    assert ep[0].advantage == pytest.approx(0.5 * 0.3 + 0.5 * 0.7)
    assert ep[3].advantage == pytest.approx(0.7)
    # every role's own reward, not the successor's value, drives its last advantage
    assert [ep[i].ret for i in (3, 4, 5)] == pytest.approx([1.0, 1.0, 1.0])


def test_ippo_differs_from_marft_only_in_credit_and_critic():
    assert get_algorithm("ippo") is IPPO
    assert (IPPO.critic, MARFT.critic) == ("per_role", "centralized")
    ep = [_turn("a", 0, 0, 1.0, 0.2, False), _turn("b", 0, 1, 1.0, 0.4, True)]
    marft = [SimpleNamespace(**vars(t)) for t in ep]
    assign_advantages([ep], IPPO.credit, gamma=0.9, lam=0.9)
    assign_advantages([marft], MARFT.credit, gamma=0.9, lam=0.9)
    assert ep[0].advantage == pytest.approx(1.0 - 0.2)  # own team reward, terminal
    assert marft[0].advantage == pytest.approx(0.9 * 0.4 - 0.2 + 0.81 * (1.0 - 0.4))


def test_ippo_uses_the_shared_learner_with_per_role_heads():
    from test_ppo import FakePolicy, _scored  # same folder (pytest puts it on sys.path)

    policy = FakePolicy(["a", "b"], critic="per_role")
    learner = PPOLearner(policy, PPOConfig(epochs=1, minibatches=1), IPPO)
    assert sorted(learner.critic_opts) == ["a", "b"]
    batch = _scored(learner)
    before = policy.heads["a"].weight.detach().clone()
    learner.update(batch, 0)
    assert not policy.heads["a"].weight.detach().equal(before)
