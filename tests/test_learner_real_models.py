"""The learner on models shaped like real chat models (Qwen2, Llama, GPT-NeoX, GPT-2).

Sampling = training, stopping, prompt budgets, bounded micro-batches, degenerate
batches and ratios, each on a real TeamPolicy; the families train end to end
through ``flexmg train --model PATH``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from family_models import QWEN_INSTRUCT_SAMPLING, build_family_model
from flexmg.agents.marft import MARFT
from flexmg.agents.policy import PolicyConfig, TeamPolicy
from flexmg.agents.ppo import PPOConfig, PPOLearner, _Stats
from flexmg.agents.samples import RolloutBatch, Sample
from flexmg.models.sampling import processed_logits

ROLES = ["solver", "verifier"]
OBS = {"task": "What is 7 + 5?", "role": "solver", "instructions": "Solve it; box the answer."}


@pytest.fixture(scope="module")
def qwen_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_family_model(tmp_path_factory.mktemp("qwen-instruct"), "qwen2")


def make(path: str, **kw: object) -> TeamPolicy:
    cfg = {
        "model": path,
        "critic_hidden": (16,),
        "max_new_tokens": 6,
        "device": "cpu",
        "temperature": 1.0,
        "micro_batch": 0,
    }  # a model folder is the "llm" kind: set here
    return TeamPolicy(ROLES, PolicyConfig(**{**cfg, **kw}))  # type: ignore[arg-type]


def perturb(policy: TeamPolicy, seed: int = 0, scale: float = 0.3) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for role in ROLES:
            for p in policy.policy_parameters(role):
                p.add_(torch.randn(p.shape, generator=g) * scale)


def test_model_carries_the_qwen_instruct_sampling_defaults(qwen_path: str) -> None:
    from transformers import GenerationConfig

    saved = GenerationConfig.from_pretrained(qwen_path)
    assert {k: getattr(saved, k) for k in QWEN_INSTRUCT_SAMPLING} == QWEN_INSTRUCT_SAMPLING
    policy = make(qwen_path)
    assert policy.prompt_style == "chat"
    assert policy.build_prompt(OBS).endswith("<|im_start|>assistant\n")


def test_rollouts_sample_the_learners_distribution_not_the_models_defaults(qwen_path: str) -> None:
    # Inheriting top_k=20 / top_p=0.8 would never draw tokens outside the top 20; the
    # learner's temperature-only distribution puts much of its mass there.
    policy = make(qwen_path, temperature=0.7, max_new_tokens=1)
    torch.manual_seed(0)
    batch = policy.act("solver", [OBS] * 1500)
    ids = policy.prompt_ids(OBS)
    with torch.no_grad():
        logits = policy.model(input_ids=torch.tensor([ids])).logits[0, -1]
    probs = torch.softmax(processed_logits(logits, policy.config.sampling), -1)
    top20 = set(torch.topk(probs, 20).indices.tolist())
    outside_mass = 1.0 - float(probs[list(top20)].sum())
    drawn_outside = sum(a[0] not in top20 for a in batch.action_ids) / len(batch.action_ids)
    assert outside_mass > 0.3
    assert drawn_outside == pytest.approx(outside_mass, abs=0.05)
    # the sampler's own log-probs are the learner's (old log-probs PPO uses)
    diffs = [s - o for s_lp, o_lp in zip(batch.sampler_logprobs, batch.token_logprobs, strict=True)
             for s, o in zip(s_lp, o_lp, strict=True)]  # fmt: skip
    assert max(abs(d) for d in diffs) < 1e-4


def test_greedy_is_the_plain_argmax(qwen_path: str) -> None:
    policy = make(qwen_path, max_new_tokens=5)
    perturb(policy)
    out = policy.act("solver", [OBS], greedy=True).action_ids[0]
    ids = policy.prompt_ids(OBS)
    want = []
    with torch.no_grad():
        for _ in range(len(out)):
            logits = policy.model(input_ids=torch.tensor([ids + want])).logits[0, -1]
            want.append(int(logits.argmax()))
    assert out == want


def test_turn_end_stops_the_action_and_is_trained(qwen_path: str) -> None:
    policy = make(qwen_path, max_new_tokens=8)
    im_end = policy.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert im_end in policy.stop_ids and policy.tokenizer.eos_token_id in policy.stop_ids
    calls = {"n": 0}

    def end_on_third(_m: torch.nn.Module, _i: object, out: torch.Tensor) -> torch.Tensor:
        calls["n"] += 1
        if out.shape[1] == 1 and calls["n"] == 3:  # the third sampling step
            out = out.clone()
            out[..., im_end] += 1e4
        return out

    handle = policy._head.register_forward_hook(end_on_third)
    try:
        torch.manual_seed(0)
        batch = policy.act("solver", [OBS])
    finally:
        handle.remove()
    action = batch.action_ids[0]
    assert len(action) == 3 and action[-1] == im_end and batch.truncated == [False]
    assert "<|im_end|>" not in batch.texts[0]  # the text has no stop token
    ev = policy.evaluate("solver", batch.prompt_ids, batch.action_ids)
    assert ev.mask[0].sum() == 3  # the stop token's log-prob is part of the action
    ev.token_logprobs[0, 2].backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0
               for p in policy.policy_parameters("solver"))  # fmt: skip
    cut = policy.act("solver", [OBS] * 3)
    limit = policy.config.max_new_tokens
    assert any(cut.truncated)  # a random model rarely stops within 8 tokens
    assert all(t == (len(a) == limit and a[-1] not in policy.stop_ids)
               for t, a in zip(cut.truncated, cut.action_ids, strict=True))  # fmt: skip


def test_prompt_budget_keeps_instructions_and_task_and_cuts_old_context(qwen_path: str) -> None:
    policy = make(qwen_path, max_prompt_tokens=400)
    context = "OLDEST-MESSAGE " + "[planner]: step\n" * 200 + "NEWEST-MESSAGE"
    obs = {**OBS, "context": context}
    ids = policy.prompt_ids(obs)
    text = policy.tokenizer.decode(ids)
    assert len(ids) <= 400
    assert "Solve it; box the answer." in text and "What is 7 + 5?" in text
    assert "NEWEST-MESSAGE" in text and "OLDEST-MESSAGE" not in text
    assert "characters of earlier context cut" in text
    assert text.index("What is 7 + 5?") < text.index("cut ...]") < text.index("NEWEST-MESSAGE")
    assert text.rstrip().endswith("assistant")  # the generation prompt survives
    huge_task = {**OBS, "task": "T" * 5000 + " the question?"}
    assert len(policy.prompt_ids(huge_task)) <= 400


def test_micro_batched_scoring_and_gradients_equal_the_whole_batch(qwen_path: str) -> None:
    whole, micro = make(qwen_path), make(qwen_path, micro_batch=1)
    perturb(whole)
    micro.load_trainable_state(whole.trainable_state())
    torch.manual_seed(0)
    obs = [{**OBS, "task": f"What is {i} + {i}?"} for i in range(4)]
    batch = whole.act("solver", obs)
    scored = micro.score("solver", batch.prompt_ids, batch.action_ids)
    for a, b in zip(scored[0], batch.token_logprobs, strict=True):
        assert a == pytest.approx(b, abs=1e-5)
    grads = []
    for policy in (whole, micro):
        learner = PPOLearner(policy, PPOConfig(), MARFT)
        part = _samples(batch, advantages=[1.0, -0.5, 0.25, -1.0])
        learner._accumulate("solver", part, True, _Stats())
        grads.append([p.grad.clone() for p in policy.policy_parameters("solver")])
        grads.append([p.grad.clone() for p in policy.critic_parameters("solver")])
    for g_whole, g_micro in zip(grads[0] + grads[1], grads[2] + grads[3], strict=True):
        torch.testing.assert_close(g_micro, g_whole, rtol=1e-4, atol=1e-6)


def _samples(batch: object, advantages: list[float], rewards: list[float] | None = None) -> list:
    out = []
    for i, adv in enumerate(advantages):
        out.append(Sample(
            episode=i, turn=0, role="solver", round=0, prompt_ids=batch.prompt_ids[i],
            action_ids=batch.action_ids[i], truncated=batch.truncated[i],
            reward=(rewards or [0.0] * len(advantages))[i],
            team_reward=(rewards or [0.0] * len(advantages))[i], last_in_round=True,
            sampler_logprobs=batch.sampler_logprobs[i],
            old_token_logprobs=batch.token_logprobs[i], old_value=batch.values[i],
            old_token_values=batch.token_values[i], advantage=adv, ret=adv,
        ))  # fmt: skip
    return out


def test_equal_rewards_give_no_actor_step_and_dropout_keeps_the_first_ratio_at_one(
    qwen_path: str,
) -> None:
    policy = make(qwen_path, lora_dropout=0.5)
    perturb(policy)
    torch.manual_seed(1)
    batch = policy.act("solver", [OBS] * 6)
    before = [p.detach().clone() for p in policy.policy_parameters("solver")]
    learner = PPOLearner(policy, PPOConfig(epochs=1, minibatches=1), MARFT)
    flat = RolloutBatch([[s] for s in _samples(batch, [0.0] * 6)], [{}] * 6)
    stats = learner.update(flat, update=0)
    assert stats["flat_rewards"] == 1.0 and stats["actor_steps"] == 0
    assert all(torch.equal(a, b) for a, b in zip(before, policy.policy_parameters("solver")))
    assert "grad_norm_critic" in stats  # the critic still learns
    varied = RolloutBatch([[s] for s in _samples(batch, [0.0] * 6, [0, 1, 0, 1, 1, 0])], [{}] * 6)
    stats = learner.update(varied, update=1)
    assert stats["flat_rewards"] == 0.0 and stats["actor_steps"] == 1
    # one minibatch: the ratio is evaluated before any step, with dropout on in the config
    assert stats["approx_kl"] < 1e-9 and stats["clipfrac/solver"] == 0.0
    assert abs(stats["sampler_kl"]) < 1e-4


def test_ratio_modes_log_the_clip_fraction_per_role(qwen_path: str) -> None:
    policy = make(qwen_path)
    start = policy.trainable_state()
    torch.manual_seed(2)
    batch = policy.act("solver", [OBS] * 4)
    clipfrac = {}
    for ratio in ("token", "action_mean", "action_sum"):
        policy.load_trainable_state(start)
        cfg = PPOConfig(ratio=ratio, epochs=3, minibatches=2, target_kl=None, lr_actor=0.05)
        learner = PPOLearner(policy, cfg, MARFT)
        rollout = RolloutBatch([[s] for s in _samples(batch, [0.0] * 4, [0, 1, 1, 0])], [{}] * 4)
        stats = learner.update(rollout, update=0)
        assert stats["actor_steps"] == 6
        clipfrac[ratio] = stats["clipfrac/solver"]
    assert 0.0 < clipfrac["token"] <= 1.0
    # the summed log-ratio of a whole action moves furthest, the mean one least
    assert clipfrac["action_sum"] >= clipfrac["action_mean"]
    assert clipfrac["action_sum"] > 0.0


def _train(path: str, run_dir: Path, *flags: str) -> dict:
    from flexmg.cli import main

    args = ["train", "--model", path, "--env", "math-2agent", "--updates", "2",
            "--episodes-per-update", "4", "--eval-episodes", "4", "--eval-every", "2",
            "--max-new-tokens", "6", "--truncation-penalty", "0.5", "--run-dir", str(run_dir),
            "--no-progress", *flags]  # fmt: skip
    assert main(args) == 0
    return json.loads((run_dir / "summary.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("family", ["qwen2", "llama", "gpt_neox", "gpt2"])
def test_flexmg_train_runs_two_updates_on_each_family(family: str, tmp_path: Path) -> None:
    path = build_family_model(tmp_path / "model", family, stop_scale=8.0)
    for name, flags in (("per-role", ()), ("shared", ("--share-parameters",)),
                        ("bf16", ("--bf16",))):  # fmt: skip
        if name == "bf16" and family not in ("qwen2", "gpt2"):
            continue
        summary = _train(path, tmp_path / name, *flags)
        assert summary["updates"] == 2 and summary["eval_prompts"] >= 1
        records = [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").open()]
        train = [r for r in records if r["kind"] == "train"]
        assert len(train) == 2
        tolerance = 0.05 if name == "bf16" else 1e-3
        assert all(abs(r["sampler_kl"]) < tolerance for r in train), [
            r["sampler_kl"] for r in train
        ]
        # actions that stop and actions cut at the limit: rewards differ, the actors step
        assert all(0.0 < r["truncated_frac"] < 1.0 for r in train), train
        assert all(r["actor_steps"] > 0 and "clipfrac/solver" in r for r in train)
        config = json.loads((tmp_path / name / "config.json").read_text())
        assert config["policy_config"]["share_parameters"] is (name == "shared")
        # the completed run exported each role's LoRA in peft's layout
        adapters = tmp_path / name / "adapters"
        manifest = json.loads((adapters / "flexmg_adapters.json").read_text())
        assert manifest["base_model"] == path and set(manifest["roles"]) == {"solver", "verifier"}
        for adapter in set(manifest["roles"].values()):
            assert (adapters / adapter / "adapter_model.safetensors").is_file()
