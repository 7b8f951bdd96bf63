"""TeamPolicy: per-role adapters on one base, batched masked log-probs, critic, state I/O.

Every test uses a tiny *random* Qwen2 model saved to a temp folder with the
character tokenizer, loaded through the generic Hugging Face path (no downloads).
"""

from __future__ import annotations

import math

import pytest
import torch

from flexmg.agents.policy import ActionBatch, Evaluation, PolicyConfig, TeamPolicy
from flexmg.models.tiny.model import build_tiny_model, tiny_config
from flexmg.models.tiny.tokenizer import build_char_tokenizer

ROLES = ["solver", "verifier"]
OBS = [
    {"task": "What is 7 + 5?", "role": "solver", "context": "", "feedback": "", "round": 0},
    {"task": "What is 3 - 1?", "role": "solver", "context": "[x]: hi", "feedback": "no"},
    {"task": "What is 12 + 30? Think.", "role": "solver"},
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("tiny_random")
    build_tiny_model(
        seed=7, config=tiny_config(hidden_size=64, intermediate_size=128)
    ).save_pretrained(folder)
    build_char_tokenizer().save_pretrained(folder)
    return str(folder)


def make(model_dir: str, **kw: object) -> TeamPolicy:
    cfg = {
        "model": model_dir,
        "critic_hidden": (32, 16),
        "max_new_tokens": 8,
        "device": "cpu",
        "temperature": 1.0,
        "micro_batch": 0,
    }  # a model folder is the "llm" kind: set here
    cfg.update(kw)
    return TeamPolicy(ROLES, PolicyConfig(**cfg))  # type: ignore[arg-type]


def perturb(params: list[torch.nn.Parameter], seed: int, scale: float = 0.5) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in params:
            p.add_(torch.randn(p.shape, generator=g) * scale)


def sample_batch() -> tuple[list[list[int]], list[list[int]]]:
    prompts = [[1, 20, 21, 22, 23, 24], [1, 30], [1, 40, 41, 42], [1, 50, 51]]
    actions = [[60, 61, 62], [], [63], [64, 65, 66, 67, 68]]
    return prompts, actions


@pytest.fixture(scope="module")
def policy(model_dir: str) -> TeamPolicy:
    pol = make(model_dir)
    for i, role in enumerate(ROLES):
        perturb(pol.policy_parameters(role), seed=i)
    return pol


def test_trainable_parameters_per_role(model_dir: str) -> None:
    pol = make(model_dir)
    solver = {id(p) for p in pol.policy_parameters("solver")}
    verifier = {id(p) for p in pol.policy_parameters("verifier")}
    assert solver and verifier and not solver & verifier
    names = {id(p): n for n, p in pol.model.named_parameters()}
    # 2 layers x (q_proj, v_proj) x (lora_A, lora_B)
    assert len(solver) == 8
    assert all(".solver." in names[i] and "lora_" in names[i] for i in solver)
    assert all(p.requires_grad for p in pol.policy_parameters("verifier"))
    base = [p for n, p in pol.model.named_parameters() if "lora_" not in n]
    assert base and not any(p.requires_grad for p in base)
    assert pol.critic_name("solver") == pol.critic_name("verifier") == "team"
    assert len(pol.critic_parameters()) == len(pol.critic_parameters("solver")) == 6
    assert pol.adapter_name("verifier") == "verifier"


def test_shared_and_per_role_modes(model_dir: str) -> None:
    shared = make(model_dir, share_parameters=True, critic="per_role")
    assert shared.adapter_name("solver") == shared.adapter_name("verifier") == "shared"
    assert [id(p) for p in shared.policy_parameters("solver")] == [
        id(p) for p in shared.policy_parameters("verifier")
    ]
    assert shared.critic_name("verifier") == "verifier"
    a, b = shared.critic_parameters("solver"), shared.critic_parameters("verifier")
    assert not {id(p) for p in a} & {id(p) for p in b}
    assert len(shared.critic_parameters()) == len(a) + len(b)


def test_adapter_switch_changes_only_active_role(model_dir: str) -> None:
    pol = make(model_dir)
    prompts, actions = sample_batch()
    with torch.no_grad():
        base = pol.evaluate("solver", prompts, actions, with_ref=True)
        # Fresh adapters (B = 0) are the identity: policy == reference.
        torch.testing.assert_close(base.token_logprobs, base.ref_token_logprobs, rtol=0, atol=1e-6)
        perturb(pol.policy_parameters("verifier"), seed=1)
        solver_after = pol.evaluate("solver", prompts, actions).token_logprobs
        verifier_after = pol.evaluate("verifier", prompts, actions).token_logprobs
    torch.testing.assert_close(solver_after, base.token_logprobs, rtol=0, atol=1e-6)
    assert (verifier_after - base.token_logprobs).abs().max() > 1e-3
    with torch.no_grad():
        perturb(pol.policy_parameters("solver"), seed=2)
        verifier_again = pol.evaluate("verifier", prompts, actions).token_logprobs
    torch.testing.assert_close(verifier_again, verifier_after, rtol=0, atol=1e-6)


def test_batched_evaluate_matches_per_sample_loop(policy: TeamPolicy) -> None:
    prompts, actions = sample_batch()
    batched = policy.evaluate("verifier", prompts, actions, with_ref=True)
    t_len = max(len(a) for a in actions)
    assert batched.token_logprobs.shape == (4, t_len)
    for i, (p, a) in enumerate(zip(prompts, actions, strict=True)):
        one = policy.evaluate("verifier", [p], [a], with_ref=True)
        n = len(a)
        for field in ("token_logprobs", "entropy", "token_values", "ref_token_logprobs"):
            got = getattr(batched, field)[i]
            torch.testing.assert_close(got[:n], getattr(one, field)[0], rtol=0, atol=1e-5)
            assert torch.all(got[n:] == 0), field
        torch.testing.assert_close(
            batched.action_logprob[i], one.action_logprob[0], rtol=0, atol=1e-5
        )
        torch.testing.assert_close(batched.values[i], one.values[0], rtol=0, atol=1e-5)
        assert batched.mask[i].sum().item() == n


def test_logprobs_and_entropy_by_hand(policy: TeamPolicy) -> None:
    prompt, action = [1, 20, 21, 22], [60, 61, 62]
    ev = policy.evaluate("solver", [prompt], [action])
    policy._activate_adapter(policy.adapter_name("solver"))
    with torch.no_grad():
        logits = policy.model(input_ids=torch.tensor([prompt + action])).logits[0]
    logp = torch.log_softmax(logits.float(), -1)
    want_lp = torch.stack([logp[len(prompt) - 1 + k, t] for k, t in enumerate(action)])
    want_ent = torch.stack(
        [-(logp[len(prompt) - 1 + k].exp() * logp[len(prompt) - 1 + k]).sum() for k in range(3)]
    )
    torch.testing.assert_close(ev.token_logprobs[0].detach(), want_lp, rtol=0, atol=1e-5)
    torch.testing.assert_close(ev.entropy[0].detach(), want_ent, rtol=0, atol=1e-5)
    torch.testing.assert_close(ev.action_logprob[0].detach(), want_lp.sum(), rtol=0, atol=1e-5)
    vocab = policy.tokenizer.vocab_size if hasattr(policy.tokenizer, "vocab_size") else 101
    assert torch.all(ev.entropy >= 0) and torch.all(ev.entropy <= math.log(max(vocab, 101)) + 1e-4)


def test_temperature_is_the_learners_too(model_dir: str) -> None:
    prompts, actions = sample_batch()
    ev = make(model_dir).evaluate("solver", prompts, actions)
    torch.testing.assert_close(ev.action_logprob, ev.token_logprobs.sum(-1))
    assert ev.action_logprob[1].item() == 0.0  # the empty action
    hot = make(model_dir, temperature=2.0).evaluate("solver", prompts, actions)
    assert torch.all(hot.entropy.sum(-1)[[0, 2, 3]] > ev.entropy.sum(-1)[[0, 2, 3]])


def test_critic_reads_base_with_adapters_disabled(model_dir: str) -> None:
    pol = make(model_dir)
    prompts, actions = sample_batch()
    before = pol.evaluate("solver", prompts, actions)
    with torch.no_grad():
        perturb(pol.policy_parameters("solver"), seed=3)
        perturb(pol.policy_parameters("verifier"), seed=4)
    after = pol.evaluate("solver", prompts, actions)
    torch.testing.assert_close(after.values, before.values, rtol=0, atol=1e-6)
    torch.testing.assert_close(after.token_values, before.token_values, rtol=0, atol=1e-6)
    assert (after.token_logprobs - before.token_logprobs).abs().max() > 1e-3
    # By hand: value head on the final hidden state of the base (adapters disabled).
    p, a = prompts[0], actions[0]
    with torch.no_grad(), pol.model.disable_adapter():
        hidden = pol.model(input_ids=torch.tensor([p + a]), output_hidden_states=True)
        feats = hidden.hidden_states[-1][0]
    head = pol.value_heads[pol._head_key("team")]
    want = head(feats[len(p) - 1 : len(p) - 1 + len(a)])
    torch.testing.assert_close(after.token_values[0, :3].detach(), want.detach(), rtol=0, atol=1e-5)
    torch.testing.assert_close(after.values[0], after.token_values[0, 0])


def test_gradients_reach_only_the_right_parameters(model_dir: str) -> None:
    pol = make(model_dir)
    perturb(pol.policy_parameters("verifier"), seed=5)
    prompts, actions = sample_batch()
    ev = pol.evaluate("verifier", prompts, actions)
    ev.action_logprob.sum().backward()
    assert all(
        p.grad is not None and p.grad.abs().sum() > 0 for p in pol.policy_parameters("verifier")
    )
    assert all(p.grad is None for p in pol.policy_parameters("solver"))
    assert all(p.grad is None for p in pol.critic_parameters())
    pol.zero_grad(set_to_none=True)
    ev = pol.evaluate("verifier", prompts, actions)
    (ev.values.sum() + ev.token_values.sum()).backward()
    assert all(p.grad is not None for p in pol.critic_parameters())
    assert all(p.grad is None for r in ROLES for p in pol.policy_parameters(r))
    assert not any(p.grad is not None for n, p in pol.model.named_parameters() if "lora_" not in n)


def test_act_matches_evaluate_and_hostile_observations(policy: TeamPolicy) -> None:
    torch.manual_seed(0)
    hostile = {"task": "∑ \x00 \ud800 " + "x" * 5000, "role": "solver", "context": None, "round": 3}
    obs = [*OBS, hostile, {}]
    batch = policy.act("solver", obs)
    assert isinstance(batch, ActionBatch) and len(batch.texts) == len(obs)
    assert all(len(p) <= policy.config.max_prompt_tokens for p in batch.prompt_ids)
    assert all(len(a) <= policy.config.max_new_tokens for a in batch.action_ids)
    assert [len(v) for v in batch.sampler_logprobs] == [len(a) for a in batch.action_ids]
    assert batch.token_logprobs == batch.sampler_logprobs  # the sampler's are PPO's old ones
    assert batch.critic_features is not None and len(batch.critic_features) == len(obs)
    ev = policy.evaluate("solver", batch.prompt_ids, batch.action_ids)
    cached = policy.evaluate("solver", batch.prompt_ids, batch.action_ids, token_values=False,
                             critic_features=torch.stack(batch.critic_features))  # fmt: skip
    torch.testing.assert_close(cached.values.detach(), ev.values.detach(), rtol=0, atol=1e-5)
    for i, old in enumerate(batch.token_logprobs):
        got = ev.token_logprobs[i, : len(old)].detach()
        torch.testing.assert_close(got, torch.tensor(old), rtol=0, atol=1e-5)
        torch.testing.assert_close(got, torch.tensor(batch.sampler_logprobs[i]), rtol=0, atol=1e-4)
    torch.testing.assert_close(ev.values.detach(), torch.tensor(batch.values), rtol=0, atol=1e-5)
    policy.full_scoring = True  # the learner's own scoring pass: token values too
    try:
        full = policy.act("solver", obs)
    finally:
        policy.full_scoring = False
    assert [len(v) for v in full.token_values] == [len(a) for a in full.action_ids]
    greedy1 = policy.act("solver", OBS, greedy=True)
    greedy2 = policy.act("solver", OBS, greedy=True)
    assert greedy1.action_ids == greedy2.action_ids
    assert policy.act("solver", []).texts == []


def test_empty_actions_everywhere(model_dir: str) -> None:
    pol = make(model_dir)
    perturb(pol.policy_parameters("solver"), seed=6)
    ev = pol.evaluate("solver", [[1, 5, 6], [1, 7]], [[], []], with_ref=True)
    assert isinstance(ev, Evaluation)
    assert ev.token_logprobs.shape == ev.mask.shape == ev.token_values.shape == (2, 0)
    assert torch.equal(ev.action_logprob.detach(), torch.zeros(2))
    assert torch.isfinite(ev.values).all()
    (ev.action_logprob.sum() + ev.entropy.sum() + ev.values.sum()).backward()
    # An immediate EOS from the model gives actions of just the EOS (kept, so it is trained).
    eos = pol.tokenizer.eos_token_id
    lm_head = pol.model.get_base_model().get_output_embeddings()

    def force_eos(_m: torch.nn.Module, _i: object, out: torch.Tensor) -> torch.Tensor:
        out = out.clone()
        out[..., eos] += 1e4
        return out

    handle = lm_head.register_forward_hook(force_eos)
    try:
        batch = pol.act("solver", OBS)
    finally:
        handle.remove()
    assert batch.texts == ["", "", ""] and batch.action_ids == [[eos], [eos], [eos]]
    assert batch.truncated == [False, False, False]
    assert batch.token_logprobs == [[pytest.approx(0.0, abs=1e-4)]] * 3


def test_trainable_state_round_trip(model_dir: str, policy: TeamPolicy) -> None:
    with torch.no_grad():
        perturb(policy.critic_parameters(), seed=8, scale=0.1)
    state = policy.trainable_state()
    fresh = make(model_dir, seed=123)
    prompts, actions = sample_batch()
    assert not torch.allclose(
        fresh.evaluate("verifier", prompts, actions).action_logprob,
        policy.evaluate("verifier", prompts, actions).action_logprob,
    )
    fresh.load_trainable_state(state)
    again = fresh.trainable_state()
    for group in ("adapters", "value_heads"):
        for name, tensors in state[group].items():
            for key, value in tensors.items():
                assert torch.equal(again[group][name][key], value), (group, name, key)
    for role in ROLES:
        a = fresh.evaluate(role, prompts, actions)
        b = policy.evaluate(role, prompts, actions)
        assert torch.equal(a.action_logprob, b.action_logprob)
        assert torch.equal(a.token_values, b.token_values)


def test_state_mismatch_gives_clear_errors(model_dir: str, policy: TeamPolicy) -> None:
    state = policy.trainable_state()
    with pytest.raises(ValueError, match="adapters"):
        make(model_dir, share_parameters=True).load_trainable_state(state)
    with pytest.raises(ValueError, match="value heads"):
        make(model_dir, critic="per_role").load_trainable_state(state)
    with pytest.raises(ValueError, match="format"):
        policy.load_trainable_state({"adapters": {}})
    broken = policy.trainable_state()
    first = next(iter(broken["adapters"]["solver"]))
    broken["adapters"]["solver"][first] = torch.zeros(1)
    with pytest.raises(ValueError, match="shape"):
        policy.load_trainable_state(broken)


def test_programmer_errors(model_dir: str, policy: TeamPolicy) -> None:
    with pytest.raises(KeyError, match="unknown role"):
        policy.act("critic", OBS)
    with pytest.raises(ValueError, match="same length"):
        policy.evaluate("solver", [[1]], [])
    with pytest.raises(ValueError, match="token ids"):
        policy.evaluate("solver", [[1, 10_000]], [[]])
    with pytest.raises(TypeError, match="single dict"):
        policy.act("solver", OBS[0])  # type: ignore[arg-type]
    for bad in ({"critic": "global"}, {"temperature": 0.0}, {"micro_batch": -1}, {"top_p": 2.0}):
        with pytest.raises(ValueError, match="PolicyConfig"):
            PolicyConfig(**bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="roles"):
        TeamPolicy(["a", "a"], PolicyConfig(model=model_dir))
    with pytest.raises(ValueError, match="target modules"):
        make(model_dir, lora_target_modules=["no_such_proj"])
    with pytest.raises(OSError, match="could not load model"):
        make(model_dir + "/missing")


def test_hf_path_prompt_styles_and_options(model_dir: str, tmp_path: object) -> None:
    plain = make(model_dir)
    assert plain.prompt_style == "plain"
    # The saved character tokenizer keeps every character (spaces and newlines too).
    text = "What is 7 + 5?\n[solver]: x"
    assert plain.tokenizer.decode(plain.tokenizer(text)["input_ids"]) == text
    assert "### Role: solver" in plain.build_prompt(OBS[0])
    tok = build_char_tokenizer()
    tok.chat_template = (
        "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    folder = f"{tmp_path}/chat"
    build_tiny_model(
        seed=1, config=tiny_config(hidden_size=32, intermediate_size=64)
    ).save_pretrained(folder)
    tok.save_pretrained(folder)
    chat = make(folder, lora_target_modules=["q_proj", "k_proj", "v_proj", "o_proj"], lora_r=4)
    assert chat.prompt_style == "chat"
    assert chat.build_prompt(OBS[0]).endswith("<assistant>")
    assert len(chat.policy_parameters("solver")) == 2 * 4 * 2
    gc = make(folder, gradient_checkpointing=True, prompt_style="compact")
    prompts, actions = sample_batch()
    ev = gc.evaluate("solver", prompts, actions)
    ev.action_logprob.sum().backward()
    assert any(p.grad is not None for p in gc.policy_parameters("solver"))


# --- device and dtype selection (the CUDA code paths, exercised on a CPU) ---------


def test_device_and_dtype_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    from flexmg.agents import policy as policy_module

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert policy_module.resolve_device("auto").type == "cuda"
    assert policy_module.resolve_device("cuda:1") == torch.device("cuda:1")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert policy_module.resolve_dtype("auto", torch.device("cuda")) is torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert policy_module.resolve_dtype("auto", torch.device("cuda")) is torch.float32
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert policy_module.resolve_device("auto").type == "cpu"
    assert policy_module.resolve_dtype("auto", torch.device("cpu")) is torch.float32
    assert policy_module.resolve_dtype("fp16", torch.device("cpu")) is torch.float16
    with pytest.raises(RuntimeError, match="sees no CUDA device"):
        policy_module.resolve_device("cuda")


def test_bf16_policy_acts_evaluates_and_trains_on_cpu(model_dir: str) -> None:
    # The dtype a CUDA run gets by default (bf16) through the same code, on a CPU.
    pol = make(model_dir, dtype="bfloat16")
    assert pol.dtype is torch.bfloat16
    base = [p for n, p in pol.model.named_parameters() if "lora_" not in n]
    assert base and all(p.dtype is torch.bfloat16 for p in base)
    assert all(p.dtype is torch.float32 for p in pol.critic_parameters())
    perturb(pol.policy_parameters("solver"), seed=3, scale=0.05)
    torch.manual_seed(0)
    batch = pol.act("solver", OBS)
    old = torch.tensor([sum(lp) for lp in batch.token_logprobs])
    assert torch.isfinite(old).all()
    pol.train()
    ev = pol.evaluate("solver", batch.prompt_ids, batch.action_ids, with_ref=True)
    torch.testing.assert_close(ev.action_logprob.detach(), old, rtol=0, atol=0.05)
    assert ev.ref_token_logprobs is not None and torch.isfinite(ev.ref_token_logprobs).all()
    (ev.action_logprob.sum() + ev.values.pow(2).sum()).backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in pol.critic_parameters())
    assert all(p.grad is not None for p in pol.policy_parameters("solver"))
    assert all(p.grad is None for p in pol.policy_parameters("verifier"))
    assert all(p.grad is None for p in base)


def test_critic_features_run_each_distinct_prompt_once(model_dir: str) -> None:
    pol = make(model_dir, micro_batch=2)
    prompts, _ = sample_batch()
    group = [prompts[0], prompts[1], prompts[0], prompts[2], prompts[0], prompts[1]]
    rows_seen: list[int] = []
    hook = pol.model.register_forward_pre_hook(
        lambda _m, _a, kw: rows_seen.append(int(kw["input_ids"].shape[0])), with_kwargs=True
    )
    try:
        feats = pol.critic_features(group)
    finally:
        hook.remove()
    assert sum(rows_seen) == 3  # three distinct prompts, not six rows
    alone = torch.cat([pol.critic_features([p]) for p in prompts[:3]])
    torch.testing.assert_close(feats, alone[[0, 1, 0, 2, 0, 1]], rtol=0, atol=1e-5)
    assert pol.critic_features([]).numel() == 0
