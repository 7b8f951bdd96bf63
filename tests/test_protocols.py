"""flexmg.protocols: the real vector envs and the team policy fit the seams' protocols."""

from __future__ import annotations

import pytest

import flexmg
from flexmg.agents.marft import MARFT
from flexmg.baselines.ippo import ippo_credit
from flexmg.protocols import CreditFn, Policy, VectorEnv


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_vector_envs_are_vector_envs(vectorization: str) -> None:
    vec = flexmg.make_vec("math-2agent", num_envs=2, vectorization=vectorization)
    try:
        assert isinstance(vec, VectorEnv)
    finally:
        vec.close()
    assert not isinstance(flexmg.make("math-2agent"), VectorEnv)


def test_team_policy_is_a_policy(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    from flexmg.agents.policy import PolicyConfig, TeamPolicy
    from flexmg.models.tiny.model import build_tiny_model, tiny_config
    from flexmg.models.tiny.tokenizer import build_char_tokenizer

    build_tiny_model(
        seed=0, config=tiny_config(hidden_size=32, intermediate_size=64)
    ).save_pretrained(tmp_path)
    build_char_tokenizer().save_pretrained(tmp_path)
    policy = TeamPolicy(
        ["a", "b"], PolicyConfig(model=str(tmp_path), device="cpu", max_new_tokens=4)
    )
    assert isinstance(policy, Policy)
    batch = policy.act("a", [{"task": "1+1?", "role": "a"}], greedy=True)
    assert len(batch.texts) == 1


@pytest.mark.parametrize("credit", [ippo_credit, MARFT.credit], ids=["ippo", "marft"])
def test_credit_functions_cover_every_sample_once(credit: CreditFn) -> None:
    from types import SimpleNamespace

    episode = [
        SimpleNamespace(role=r, reward=1.0, team_reward=1.0, last_in_round=r == "b")
        for r in ("a", "b", "a", "b")
    ]
    chains = credit(episode)
    covered = sorted(i for idx, _ in chains for i in idx)
    assert covered == [0, 1, 2, 3]
    assert all(len(idx) == len(rew) for idx, rew in chains)
