"""PPO losses and update loop on hand-computed cases, with a tiny fake team policy."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from flexmg.agents.marft import MARFT
from flexmg.agents.ppo import (
    PPOConfig,
    PPOLearner,
    active_roles,
    approx_kl,
    clipped_policy_loss,
    clipped_value_loss,
    kl_to_reference,
    masked_mean,
)
from flexmg.agents.samples import RolloutBatch, Sample
from flexmg.baselines.ippo import IPPO


class FakePolicy(torch.nn.Module):
    """Contract-compatible stand-in for TeamPolicy: per-adapter token logits, linear critics."""

    def __init__(self, roles, share=False, critic="centralized", vocab=4):
        super().__init__()
        self.roles = list(roles)
        self.share = share
        self.critic = critic
        self.vocab = vocab
        adapters = {self.adapter_name(r) for r in roles}
        self.logits = torch.nn.ParameterDict(
            {a: torch.nn.Parameter(torch.linspace(-0.5, 0.5, vocab)) for a in sorted(adapters)}
        )
        heads = {self.critic_name(r) for r in roles}
        self.heads = torch.nn.ModuleDict({c: torch.nn.Linear(1, 1) for c in sorted(heads)})
        self.config = SimpleNamespace(micro_batch=0)
        self.score_reference = False

    def adapter_name(self, role):
        return "shared" if self.share else role

    def critic_name(self, role):
        return "team" if self.critic == "centralized" else role

    def policy_parameters(self, role):
        return [self.logits[self.adapter_name(role)]]

    def critic_parameters(self, role=None):
        if role is None:
            return list(self.heads.parameters())
        return list(self.heads[self.critic_name(role)].parameters())

    @torch.no_grad()
    def score(self, role, prompt_ids, action_ids, with_ref=False):
        ev = self.evaluate(role, prompt_ids, action_ids, with_ref=with_ref)
        n = [len(a) for a in action_ids]
        ref = [ev.ref_token_logprobs[i, :k].tolist() for i, k in enumerate(n)] if with_ref else None
        return ([ev.token_logprobs[i, :k].tolist() for i, k in enumerate(n)], ev.values.tolist(),
                [ev.token_values[i, :k].tolist() for i, k in enumerate(n)], ref)  # fmt: skip

    def evaluate(self, role, prompt_ids, action_ids, with_entropy=True, with_ref=False,
                 token_values=True):  # fmt: skip
        b = len(action_ids)
        t = max((len(a) for a in action_ids), default=0)
        ids = torch.zeros(b, t, dtype=torch.long)
        mask = torch.zeros(b, t)
        for i, a in enumerate(action_ids):
            ids[i, : len(a)] = torch.tensor(a, dtype=torch.long)
            mask[i, : len(a)] = 1.0
        logp = torch.log_softmax(self.logits[self.adapter_name(role)], -1)
        tok = logp[ids] * mask
        ent = -(logp.exp() * logp).sum() * mask
        head = self.heads[self.critic_name(role)]
        feat = torch.tensor([float(len(p)) for p in prompt_ids]).unsqueeze(-1) / 10
        values = head(feat).squeeze(-1)
        pos = feat + torch.arange(t).float().unsqueeze(0) / 10
        token_values = head(pos.unsqueeze(-1)).squeeze(-1) if t else torch.zeros(b, 0)
        ref = torch.full((b, t), -math.log(self.vocab)) * mask if with_ref else None
        return SimpleNamespace(
            token_logprobs=tok,
            mask=mask,
            entropy=ent,
            action_logprob=tok.sum(-1),
            values=values,
            token_values=token_values,
            ref_token_logprobs=ref,
        )


def _batch(roles=("a", "b"), episodes=4, rewards=(1.0, 0.0, 1.0, 0.0)):
    eps = []
    for e in range(episodes):
        ep = []
        for k, r in enumerate(roles):
            ep.append(
                Sample(
                    episode=e,
                    turn=k,
                    role=r,
                    round=0,
                    prompt_ids=list(range(3 + e + k)),
                    action_ids=[(e + k) % 4, 1, 2][: 1 + (e % 3)] if e != 3 else [],
                    truncated=False,
                    reward=rewards[e],
                    team_reward=rewards[e],
                    last_in_round=k == len(roles) - 1,
                )
            )
        eps.append(ep)
    return RolloutBatch(episodes=eps, metrics=[{"success": r > 0} for r in rewards])


def _scored(learner, **kw):
    """A batch whose old log-probs and values come from the learner's policy (as a rollout's)."""
    batch = _batch(**kw)
    learner.recompute(batch.samples)
    return batch


# ----------------------------------------------------------------------------- losses


def test_policy_loss_hand_computed():
    logp = torch.log(torch.tensor([1.5, 0.5, 1.0]))
    loss, clipfrac = clipped_policy_loss(
        logp, torch.zeros(3), torch.tensor([1.0, 1.0, -1.0]), clip=0.2
    )
    # min(1.5, 1.2) + min(0.5, 0.8) + min(-1, -1) = 0.7 -> loss -0.7 / 3
    assert loss.item() == pytest.approx(-0.7 / 3)
    assert clipfrac.item() == pytest.approx(2 / 3)


def test_policy_loss_masked_tokens():
    logp = torch.log(torch.tensor([[2.0, 1.0], [1.0, 9.0]]))
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    loss, _ = clipped_policy_loss(logp, torch.zeros(2, 2), torch.ones(2, 2), 0.2, mask)
    assert loss.item() == pytest.approx(-(1.2 + 1.0 + 1.0) / 3)


def test_value_loss_hand_computed():
    v = clipped_value_loss(
        torch.tensor([1.0, 0.0]), torch.tensor([0.5, 0.5]), torch.tensor([2.0, 0.0]), 0.2
    )
    assert v.item() == pytest.approx(0.5 * (1.69 + 0.09) / 2)
    unclipped = clipped_value_loss(
        torch.tensor([1.0, 0.0]), torch.tensor([0.5, 0.5]), torch.tensor([2.0, 0.0]), None
    )
    assert unclipped.item() == pytest.approx(0.5 * (1.0 + 0.0) / 2)


def test_kl_estimators_and_masked_mean():
    p = torch.log(torch.tensor([0.5, 0.25]))
    assert approx_kl(p, p).item() == pytest.approx(0.0)
    r = 2.0  # new/old ratio
    assert approx_kl(torch.tensor([math.log(r)]), torch.zeros(1)).item() == pytest.approx(
        r - 1 - math.log(r)
    )
    assert kl_to_reference(torch.zeros(1), torch.tensor([math.log(0.5)])).item() == pytest.approx(
        0.5 - math.log(0.5) - 1
    )
    assert masked_mean(torch.ones(2, 0), torch.zeros(2, 0)).item() == 0.0


def test_active_roles_schedule():
    roles = ["a", "b", "c"]
    assert [active_roles(roles, u, 2)[0] for u in range(8)] == list("aabbccaa")
    assert active_roles(roles, 3, 0) == roles


def test_config_validation():
    with pytest.raises(ValueError, match="level"):
        PPOConfig(level="word")
    with pytest.raises(ValueError, match="unknown PPOConfig keys"):
        PPOConfig.from_dict({"lr": 1.0})
    assert PPOConfig.from_dict(PPOConfig(epochs=3).to_dict()).epochs == 3


# ----------------------------------------------------------------------------- update loop


def _grad_recorder(policy):
    got: set[str] = set()
    for name, p in policy.named_parameters():
        p.register_post_accumulate_grad_hook(lambda _p, n=name: got.add(n))
    return got


@pytest.mark.parametrize("level", ["action", "token"])
def test_agent_by_agent_only_active_role_gets_policy_gradients(level):
    policy = FakePolicy(["a", "b"])
    got = _grad_recorder(policy)
    cfg = PPOConfig(level=level, agent_interval=1, epochs=1, minibatches=1, target_kl=None)
    learner = PPOLearner(policy, cfg, MARFT)
    batch = _scored(learner)
    before = {k: v.detach().clone() for k, v in policy.state_dict().items()}
    stats = learner.update(batch, update=1)  # interval 1: update 1 -> role "b"
    assert got == {"logits.b", "heads.team.weight", "heads.team.bias"}
    after = policy.state_dict()
    assert torch.equal(before["logits.a"], after["logits.a"])
    assert not torch.equal(before["logits.b"], after["logits.b"])
    assert not torch.equal(before["heads.team.weight"], after["heads.team.weight"])
    assert stats["actor_steps"] == 1 and stats["learning_roles"] == 1


def test_all_roles_learn_when_interval_zero_and_ippo_heads():
    policy = FakePolicy(["a", "b"], critic="per_role")
    got = _grad_recorder(policy)
    learner = PPOLearner(policy, PPOConfig(epochs=1, minibatches=1), IPPO)
    batch = _scored(learner)
    learner.update(batch, update=0)
    assert got == {
        "logits.a",
        "logits.b",
        "heads.a.weight",
        "heads.a.bias",
        "heads.b.weight",
        "heads.b.bias",
    }


def test_critic_warmup_trains_only_critic():
    policy = FakePolicy(["a", "b"], share=True)
    got = _grad_recorder(policy)
    learner = PPOLearner(policy, PPOConfig(critic_warmup=2), MARFT)
    batch = _scored(learner)
    stats = learner.update(batch, update=1)
    assert got == {"heads.team.weight", "heads.team.bias"}
    assert stats["critic_warmup"] == 1.0 and stats["actor_steps"] == 0
    got.clear()
    learner.update(batch, update=2)
    assert "logits.shared" in got


def test_target_kl_skips_policy_steps():
    policy = FakePolicy(["a"])
    cfg = PPOConfig(epochs=4, minibatches=1, target_kl=1e-12, lr_actor=0.5)
    learner = PPOLearner(policy, cfg, MARFT)
    batch = _scored(learner, roles=("a",))
    stats = learner.update(batch, update=0)
    # epoch 1 steps (KL is 0 before any step); epoch 2 sees KL > target: skipped, role stopped
    assert stats["actor_steps"] == 1
    assert stats["kl_skipped"] == 1


def test_first_minibatch_loss_matches_hand_computation():
    policy = FakePolicy(["a"])
    cfg = PPOConfig(epochs=1, minibatches=1, normalize_advantages=False, entropy_coef=0.0,
                    ratio="action_sum")  # fmt: skip
    learner = PPOLearner(policy, cfg, MARFT)
    batch = _scored(learner, roles=("a",), episodes=2, rewards=(1.0, 0.0))
    stats = learner.update(batch, update=0)
    samples = batch.samples
    # ratio is exactly 1 on the first minibatch: loss = -mean(advantage), advantage = r - V
    assert stats["policy_loss"] == pytest.approx(-sum(s.advantage for s in samples) / 2, abs=1e-6)
    assert [s.advantage for s in samples] == pytest.approx(
        [s.reward - s.old_value for s in samples]
    )
    assert stats["value_loss"] == pytest.approx(
        0.5 * sum(s.advantage**2 for s in samples) / 2, abs=1e-6
    )
    assert stats["approx_kl"] == pytest.approx(0.0, abs=1e-7)


def test_optimizer_state_roundtrip_and_mismatch():
    policy = FakePolicy(["a", "b"])
    learner = PPOLearner(policy, PPOConfig(), MARFT)
    batch = _scored(learner)
    learner.update(batch, 0)
    state = learner.state_dict()
    other = PPOLearner(FakePolicy(["a", "b"]), PPOConfig(), MARFT)
    other.load_state_dict(state)
    shared = PPOLearner(FakePolicy(["a", "b"], share=True), PPOConfig(), MARFT)
    with pytest.raises(ValueError, match="share_parameters"):
        shared.load_state_dict(state)


def test_linear_lr_schedule():
    learner = PPOLearner(FakePolicy(["a"]), PPOConfig(lr_actor=0.1, lr_critic=0.2), MARFT)
    assert learner.set_progress(5, 10) == pytest.approx(0.5)
    assert learner.actor_opts["a"].param_groups[0]["lr"] == pytest.approx(0.05)
    assert learner.critic_opts["team"].param_groups[0]["lr"] == pytest.approx(0.1)
    const = PPOLearner(FakePolicy(["a"]), PPOConfig(lr_schedule="constant"), MARFT)
    assert const.set_progress(9, 10) == 1.0
    with pytest.raises(ValueError, match="lr_schedule"):
        PPOConfig(lr_schedule="cosine")


def test_kl_penalty_to_reference_uses_base_logprobs():
    policy = FakePolicy(["a"])
    learner = PPOLearner(policy, PPOConfig(kl_coef=0.5, epochs=1, minibatches=1), MARFT)
    batch = _scored(learner, roles=("a",))
    s = batch.samples[0]
    assert s.ref_token_logprobs == pytest.approx([-math.log(4)] * len(s.action_ids))
    stats = learner.update(batch, 0)
    # policy logits differ from the uniform reference, so the k3 estimate is positive
    assert stats["kl_ref"] > 0
    no_ref = PPOLearner(FakePolicy(["a"]), PPOConfig(), MARFT)
    batch2 = _scored(no_ref, roles=("a",))
    assert batch2.samples[0].ref_token_logprobs is None
    assert "kl_ref" not in no_ref.update(batch2, 0)


def test_explained_variance_is_not_a_number_on_flat_rewards():
    # every episode failed: returns vary only by the critic's bootstrap, EV would be noise
    learner = PPOLearner(FakePolicy(["a", "b"]), PPOConfig(epochs=1, minibatches=1), MARFT)
    flat = learner.update(_scored(learner, rewards=(0.0, 0.0, 0.0, 0.0)), update=0)
    assert flat["flat_rewards"] == 1.0 and flat["actor_steps"] == 0
    assert all(math.isnan(flat[k]) for k in ("explained_variance", "explained_variance/a"))
    mixed = learner.update(_scored(learner), update=1)
    assert mixed["flat_rewards"] == 0.0 and math.isfinite(mixed["explained_variance/b"])
