"""``--critic-steps``: extra critic-only steps on a real rollout's cached features (tiny model).

They fit the value head to the batch's returns better than PPO's single step does, and they
leave the actors exactly where PPO put them.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest

import flexmg

pytest.importorskip("torch")


def _learner(critic_steps: int, holdout: float = 0.0):
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
    config = PPOConfig(epochs=1, minibatches=1, critic_steps=critic_steps, lr_critic=1e-3,
                       critic_holdout=holdout)  # fmt: skip
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


def test_held_out_episodes_do_not_train_the_critic_and_a_step_that_hurts_them_is_undone() -> None:
    import torch

    from flexmg.agents.critic import ValueHead
    from flexmg.agents.critic_fit import fit_values, holdout_episodes

    torch.manual_seed(0)
    head = ValueHead(2, hidden=(8,))
    values = lambda role, f: head(f.unsqueeze(1))[:, 0]  # noqa: E731
    held = holdout_episodes(range(8), 0.25)
    # the fitted episodes say "+5 when the first feature is 1"; the held-out ones, all with
    # that feature, say -5: every step towards the fit is a step away from them
    samples = [SimpleNamespace(episode=i, critic_features=torch.tensor([float(i % 2), 1.0]),
                               ret=-5.0 if i in held else 5.0 * (i % 2)) for i in range(8)]  # fmt: skip
    start = [p.detach().clone() for p in head.parameters()]
    opt = torch.optim.Adam(head.parameters(), lr=0.05)
    fit = fit_values(values, {"a": samples}, [opt], list(head.parameters()), 30, holdout=0.25)
    assert held == {3, 7} and fit is not None and fit.steps_kept == 0
    assert all(bool((p == q).all()) for p, q in zip(head.parameters(), start, strict=True))
    # without the holdout the same steps fit all eight and move the critic
    fit_all = fit_values(values, {"a": samples}, [opt], list(head.parameters()), 30)
    assert fit_all is not None and fit_all.holdout_loss is None and fit_all.steps_kept == 30
    assert not all(bool((p == q).all()) for p, q in zip(head.parameters(), start, strict=True))


def test_with_every_step_kept_the_holdout_fit_equals_a_fit_without_the_held_out_episodes() -> None:
    import torch

    from flexmg.agents.critic import ValueHead
    from flexmg.agents.critic_fit import fit_values

    def fitted(samples, holdout):
        torch.manual_seed(0)
        head = ValueHead(2, hidden=(8,))
        opt = torch.optim.Adam(head.parameters(), lr=0.05)
        fit = fit_values(lambda role, f: head(f.unsqueeze(1))[:, 0], {"a": samples}, [opt],
                         list(head.parameters()), 10, holdout=holdout)  # fmt: skip
        return fit, [p.detach().clone() for p in head.parameters()]

    # held-out episodes 3 and 7 agree with the fitted ones, so every step helps them
    samples = [SimpleNamespace(episode=i, critic_features=torch.tensor([float(i % 2), 1.0]),
                               ret=5.0 * (i % 2)) for i in range(8)]  # fmt: skip
    with_holdout, a = fitted(samples, 0.25)
    _, b = fitted([s for s in samples if s.episode not in (3, 7)], 0.0)
    assert with_holdout is not None and with_holdout.steps_kept == 10
    assert all(bool((p == q).all()) for p, q in zip(a, b, strict=True))


def test_critic_holdout_on_a_real_rollout_logs_what_it_kept() -> None:
    import torch

    from flexmg.agents.config import PPOConfig
    from flexmg.agents.samples import collect_rollout

    with pytest.raises(ValueError, match="--critic-steps K"):
        PPOConfig(critic_holdout=0.25)
    policy, learner = _learner(40, holdout=0.25)
    vec = flexmg.make_vec("math-2agent", num_envs=16, split="train")
    try:
        batch = collect_rollout(policy, vec, seed=0)
    finally:
        vec.close()
    stats = learner.update(batch, 0, torch.Generator().manual_seed(0))
    assert 0 <= stats["critic_steps_kept"] <= 40
    assert stats["critic_holdout_loss"] >= 0 and stats["critic_fit_loss"] >= 0
