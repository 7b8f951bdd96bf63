"""The tiny model, its character tokenizer, prompt formats, warm start and LLMAgent."""

from __future__ import annotations

import json
import random
import re

import pytest
import torch
from flexmg.agents import warmstart
from flexmg.agents.llm_agent import (
    LLMAgent,
    chat_messages,
    compact_prompt,
    plain_prompt,
    render_prompt,
    resolve_prompt_style,
)
from flexmg.agents.policy import PolicyConfig, TeamPolicy
from flexmg.agents.tiny_model import (
    TINY_ASSET_DIR,
    build_tiny_model,
    count_parameters,
    load_tiny,
    mid_config,
    tiny_config,
)
from flexmg.agents.tokenizer import CHARACTERS, build_char_tokenizer, char_vocab


def test_char_tokenizer_round_trip_and_specials() -> None:
    tok = build_char_tokenizer()
    text = "Q:What is 7 + 5?\n[solver]: \\boxed{12}\t~"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == len(text) and tok.decode(ids) == text
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id, tok.unk_token_id) == (0, 1, 2, 3)
    assert len(tok) == len(char_vocab()) == 4 + len(CHARACTERS)
    assert tok.padding_side == "left"
    # Unknown unicode becomes <unk>, one per character; nothing crashes.
    ids = tok("é∑🙂", add_special_tokens=False)["input_ids"]
    assert ids == [tok.unk_token_id] * 3


def test_tiny_config_and_parameter_count() -> None:
    model = build_tiny_model(seed=0)
    assert model.config.vocab_size == len(char_vocab())
    assert 300_000 < count_parameters(model) < 1_000_000
    names = {n for n, _ in model.named_modules()}
    assert any(n.endswith("q_proj") for n in names) and any(n.endswith("v_proj") for n in names)
    assert tiny_config(num_hidden_layers=3).num_hidden_layers == 3
    mid = mid_config()
    approx = 12 * mid.num_hidden_layers * mid.hidden_size**2  # rough transformer estimate
    assert 30e6 < approx < 80e6
    a, b = build_tiny_model(seed=1), build_tiny_model(seed=1)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=True))
    state = torch.random.get_rng_state()
    build_tiny_model(seed=2)
    assert torch.equal(state, torch.random.get_rng_state())  # global RNG untouched


def test_prompt_formats() -> None:
    obs = {
        "task": "What is 7 + 5?",
        "role": "verifier",
        "instructions": "Check the answer; write it as \\boxed{...}.",
        "round": 1,
        "context": "[solver]: \\boxed{13}",
        "feedback": "wrong",
    }
    assert compact_prompt(obs) == "Q:What is 7 + 5?\n[solver]: \\boxed{13}\nF:wrong\n[verifier]:"
    long = compact_prompt({"task": "t" * 10_000, "context": "c" * 10_000, "role": "r" * 500})
    assert len(long) < 1_000 and long.endswith("]:")
    plain = plain_prompt(obs)
    assert plain.startswith("### Role: verifier\nCheck the answer")
    assert "### Team transcript\n[solver]: \\boxed{13}" in plain and "### Feedback\nwrong" in plain
    msgs = chat_messages(obs)
    assert msgs[0] == {"role": "system", "content": obs["instructions"]}
    assert "What is 7 + 5?" in msgs[1]["content"] and "verifier" in msgs[1]["content"]
    assert resolve_prompt_style("auto", build_char_tokenizer(), is_tiny=False) == "plain"
    with pytest.raises(ValueError, match="chat template"):
        resolve_prompt_style("chat", build_char_tokenizer(), is_tiny=False)
    with pytest.raises(ValueError, match="prompt_style"):
        resolve_prompt_style("fancy", None, is_tiny=True)
    # Hostile observations: wrong types, missing keys, not crashing.
    assert render_prompt({"task": 5, "role": None, "context": ["x"]}, "compact").startswith("Q:5")
    assert render_prompt({}, "plain").startswith("### Role: agent")


def test_teacher_episode_format() -> None:
    rng = random.Random(0)
    roles = warmstart.WORKFLOWS["math-3agent"]
    pairs = warmstart.teacher_episode("What is 2 + 3?", "5", roles, rng)
    assert [p.rsplit("\n", 1)[-1] for p, _ in pairs] == ["[planner]:", "[solver]:", "[verifier]:"]
    assert all(a in ("\\boxed{5}", "\\boxed{6}", "5", "6") for _, a in pairs)
    # Later roles see every predecessor's output, exactly as the env renders context.
    want = f"Q:What is 2 + 3?\n[planner]: {pairs[0][1]}\n[solver]: {pairs[1][1]}\n[verifier]:"
    assert pairs[2][0] == want
    # The teacher is noisy but not useless: right values and boxes at the set rates.
    for task, gold, op in (("What is 2 + 3?", "5", "+"), ("What is 9 - 4?", "5", "-")):
        answers = [
            warmstart.teacher_episode(task, gold, ["solver"], rng)[0][1] for _ in range(3000)
        ]
        boxed = sum(a.startswith("\\boxed{") for a in answers) / len(answers)
        right = sum(a in ("5", "\\boxed{5}") for a in answers) / len(answers)
        assert abs(boxed - warmstart.P_BOX[op]) < 0.04, (op, boxed)
        assert abs(right - warmstart.P_RIGHT) < 0.04, (op, right)
        assert set(answers) == {"\\boxed{5}", "\\boxed{6}", "5", "6"}


def test_warmstart_is_deterministic_and_saves_atomically(tmp_path: object) -> None:
    a, info = warmstart.train(seed=3, steps=3, batch_size=8, log_every=0)
    b, _ = warmstart.train(seed=3, steps=3, batch_size=8, log_every=0)
    c, _ = warmstart.train(seed=4, steps=3, batch_size=8, log_every=0)
    assert warmstart.same_weights(a, b) and not warmstart.same_weights(a, c)
    folder = tmp_path / "tiny"  # type: ignore[operator]
    warmstart.save(a, info, folder)
    warmstart.save(a, info, folder)  # replacing an existing checkpoint works
    loaded, tok = load_tiny(folder)
    assert warmstart.same_weights(a, loaded)
    manifest = json.loads((folder / "warmstart.json").read_text())
    assert manifest["seed"] == 3 and len(manifest["weights_sha256"]) == 64
    assert sorted(p.name for p in folder.parent.iterdir()) == ["tiny"]  # no temp leftovers
    with pytest.raises(FileNotFoundError, match="python -m flexmg.agents.warmstart"):
        load_tiny(tmp_path / "missing")  # type: ignore[operator]


def _shipped() -> tuple[object, object]:
    if not (TINY_ASSET_DIR / "model.safetensors").is_file():
        pytest.fail(f"the warm-started tiny model is missing from {TINY_ASSET_DIR}")
    return load_tiny()


def test_shipped_checkpoint_is_warm_but_not_saturated() -> None:
    model, tok = _shipped()
    source = warmstart.math_source("eval", 1)
    tasks = [source.get(i) for i in range(104)]
    sampled = warmstart.team_accuracy(model, tok, tasks, ("solver",), greedy=False, seed=0)
    greedy = warmstart.team_accuracy(model, tok, tasks, ("solver",), greedy=True)
    # Above 0 (it answers in the graded format part of the time) and well below the
    # ceiling (it often forgets the box), so RL has room: see agents/warmstart.py.
    assert 0.05 < sampled < 0.6, sampled
    assert 0.05 < greedy < 0.8, greedy
    manifest = json.loads((TINY_ASSET_DIR / "warmstart.json").read_text())
    assert manifest["task_source"] == "arithmetic"


def test_default_policy_and_llm_agent_on_the_tiny_model() -> None:
    _shipped()
    policy = TeamPolicy(["solver", "verifier"], PolicyConfig(critic_hidden=(32,), device="cpu"))
    assert policy.prompt_style == "compact"
    agent = LLMAgent(policy, greedy=True)
    obs = [
        {"task": "What is 2 + 3?", "role": "solver", "context": ""},
        {"task": "What is 2 + 3?", "role": "verifier", "context": "[solver]: \\boxed{5}"},
        {"task": "What is 9 - 4?", "role": "solver"},
    ]
    out = agent.act(obs)
    # The warm-started model answers with a number, boxed or (often) bare.
    assert len(out) == 3 and all(re.fullmatch(r"(\\boxed\{)?-?\d+\}?", o) for o in out), out
    by_name = LLMAgent("tiny", role="solver", greedy=True, critic_hidden=(8,))
    assert by_name.act(obs[:1]) == out[:1]  # fresh adapters are the identity
    assert isinstance(by_name(obs[2]), str)
    with pytest.raises(TypeError, match="list of observation"):
        agent.act(obs[0])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="only apply"):
        LLMAgent(policy, max_new_tokens=4)


@pytest.mark.slow
def test_warmstart_reproduces_the_shipped_checkpoint_exactly() -> None:
    """`python -m flexmg.agents.warmstart` (defaults) rebuilds the asset bit for bit."""
    shipped, _ = _shipped()
    manifest = json.loads((TINY_ASSET_DIR / "warmstart.json").read_text())
    model, info = warmstart.train(**{k: manifest[k] for k in warmstart.DEFAULTS}, log_every=0)
    assert warmstart.same_weights(model, shipped)
    assert info["final_loss"] == pytest.approx(manifest["final_loss"], abs=1e-9)
