"""``--critic-steps``: extra critic-only steps on a real rollout's cached features (tiny model).

They fit the value head to the batch's returns better than PPO's single step does, and they
leave the actors exactly where PPO put them.
"""

from __future__ import annotations

import copy

import pytest

import flexmg

pytest.importorskip("torch")


def _learner(critic_steps: int):
    import torch

    from flexmg.agents.config import PolicyConfig, PPOConfig
    from flexmg.agents.marft import get_algorithm
    from flexmg.agents.policy import TeamPolicy
    from flexmg.agents.ppo import PPOLearner

    algo = get_algorithm("marft")
    torch.manual_seed(0)
    policy = TeamPolicy(
        ["solver", "verifier"], PolicyConfig(critic=algo.critic, max_new_tokens=24, seed=0)
    )
    config = PPOConfig(epochs=1, minibatches=1, critic_steps=critic_steps, lr_critic=1e-3)
    return policy, PPOLearner(policy, config, algo)


def _value_error(policy, batch) -> float:
    import torch

    with torch.no_grad():
        err = [
            (float(policy.values(s.role, torch.as_tensor(s.critic_features)[None])[0]) - s.ret) ** 2
            for s in batch.samples
        ]
    return sum(err) / len(err)


def test_critic_steps_fit_values_and_leave_the_actors_alone() -> None:
    from flexmg.agents.samples import collect_rollout

    plain_policy, plain = _learner(0)
    fitted_policy, fitted = _learner(40)
    vec = flexmg.make_vec("math-2agent", num_envs=16, split="train")
    try:
        batch = collect_rollout(plain_policy, vec, seed=0)
    finally:
        vec.close()
    assert len({s.reward for s in batch.samples}) > 1, "rewards must vary to be fitted"
    plain_batch, fitted_batch = copy.deepcopy(batch), copy.deepcopy(batch)
    import torch

    plain_stats = plain.update(plain_batch, 0, torch.Generator().manual_seed(0))
    fitted_stats = fitted.update(fitted_batch, 0, torch.Generator().manual_seed(0))
    assert "critic_fit_loss" in fitted_stats and "critic_fit_loss" not in plain_stats
    for name, a in plain_policy.model.named_parameters():
        b = dict(fitted_policy.model.named_parameters())[name]
        if "lora_" in name:
            assert bool((a == b).all()), f"{name}: critic steps moved an actor"
    # the same returns (credit does not depend on the learner's config when the values agree)
    assert [s.ret for s in plain_batch.samples] == [s.ret for s in fitted_batch.samples]
    fitted_error = _value_error(fitted_policy, fitted_batch)
    plain_error = _value_error(plain_policy, fitted_batch)
    assert fitted_error < 0.5 * plain_error, (fitted_error, plain_error)
