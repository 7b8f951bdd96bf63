"""The tiny model, its character tokenizer, prompt formats, warm start and LLMAgent."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest
import torch

import flexmg
from flexmg.agents.llm_agent import LLMAgent
from flexmg.agents.policy import PolicyConfig, TeamPolicy
from flexmg.envs.families.teachers import CodeTeacher, MathTeacher
from flexmg.metrics import bootstrap_ci, pass_at_k
from flexmg.models.prompts import (
    chat_messages,
    compact_prompt,
    plain_prompt,
    render_prompt,
    resolve_prompt_style,
)
from flexmg.models.tiny import warmstart
from flexmg.models.tiny.model import (
    TINY_ASSET_DIR,
    build_tiny_model,
    count_parameters,
    load_tiny,
    mid_config,
    tiny_config,
)
from flexmg.models.tiny.tokenizer import CHARACTERS, build_char_tokenizer, char_vocab
from flexmg.models.tiny.transcripts import teacher_episode
from flexmg.tasks import Task


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
    roles = warmstart.family_mixture("math").workflows[2]
    assert roles == tuple(flexmg.make("math-3agent").possible_agents)
    task = Task(id="t", prompt="What is 2 + 3?", answer="5")
    pairs = teacher_episode(task, roles, MathTeacher(), rng)
    assert [p.rsplit("\n", 1)[-1] for p, _ in pairs] == ["[planner]:", "[solver]:", "[verifier]:"]
    # Later roles see every predecessor's output, exactly as the env renders context.
    want = f"Q:What is 2 + 3?\n[planner]: {pairs[0][1]}\n[solver]: {pairs[1][1]}\n[verifier]:"
    assert pairs[2][0] == want


def _value(action: str) -> str:
    """The number an action ends with: ``40+07=47 \\boxed{47}`` and ``40+07=47`` give 47."""
    return action.rsplit(" ", 1)[-1].rsplit("=", 1)[-1].removeprefix("\\boxed{").removesuffix("}")


def test_math_teacher_rates_right_slip_noise_and_format() -> None:
    teacher, rng = MathTeacher(), random.Random(1)
    task = Task(id="t", prompt="What is 40 + 7?", answer="47")
    actions = [teacher_episode(task, ["solver"], teacher, rng)[0][1] for _ in range(4000)]
    values = [_value(a) for a in actions]
    rate = {v: values.count(v) / len(values) for v in set(values)}
    assert abs(rate["47"] - teacher.p_right) < 0.03 and abs(rate["48"] - teacher.p_slip) < 0.03
    assert max(r for v, r in rate.items() if v not in ("47", "48")) < 0.05  # noise is spread
    boxed = sum(a.endswith("}") for a in actions) / len(actions)
    assert abs(boxed - teacher.p_format) < 0.02
    # The work comes first (operands with two digits each), and the box repeats its value.
    assert all(a.startswith("40+07=" + _value(a)) for a in actions)
    assert all(a == f"40+07={_value(a)} \\boxed{{{_value(a)}}}" for a in actions if a.endswith("}"))
    assert MathTeacher(show_work=False).render("47", rng) in ("47", "\\boxed{47}")
    other = Task(id="w", prompt="What is 3 times 4, plus 1?", answer="13")
    assert "=" not in teacher.value(other, rng)  # no work for prompts it cannot parse
    # The verifier copies its predecessor's value at p_copy and otherwise answers itself.
    copies = 0
    for _ in range(2000):
        solver, verifier = teacher_episode(task, ["solver", "verifier"], teacher, rng)
        copies += _value(solver[1]) == _value(verifier[1])
    own_agrees = teacher.p_right**2 + teacher.p_slip**2  # two independent draws agree
    expected = teacher.p_copy + (1 - teacher.p_copy) * own_agrees
    assert abs(copies / 2000 - expected) < 0.05
    with pytest.raises(ValueError, match="p_right \\+ p_slip"):
        MathTeacher(p_right=0.6, p_slip=0.6)
    with pytest.raises(ValueError, match="p_copy must be a probability"):
        MathTeacher(p_copy=1.5)


def test_code_teacher_right_slip_and_format_through_the_real_sandbox() -> None:
    from flexmg.envs.code import grade_code, make_code_source
    from flexmg.envs.code.procedural import reference_solution, wrong_solutions
    from flexmg.sandboxes import make_sandbox

    task = make_code_source("procedural", split="train").get(2)
    teacher, rng = CodeTeacher(), random.Random(0)
    actions = [teacher_episode(task, ["coder"], teacher, rng)[0][1] for _ in range(2000)]
    fenced = [a for a in actions if a.startswith("```python\n") and a.endswith("\n```")]
    assert abs(len(fenced) / len(actions) - teacher.p_format) < 0.02
    right = "```python\n" + reference_solution(task) + "```"
    slip = "```python\n" + wrong_solutions(task)[0][1] + "```"
    assert abs(actions.count(right) / len(fenced) - teacher.p_right) < 0.05
    assert abs(actions.count(slip) / len(fenced) - teacher.p_slip) < 0.05
    with make_sandbox("auto", timeout=5.0) as sandbox:
        assert grade_code(right, task, sandbox).reward == 1.0
        assert grade_code(slip, task, sandbox).reward < 1.0
        bare = next(a for a in actions if not a.startswith("```"))
        assert grade_code(bare, task, sandbox).format_error


def test_pass_at_k_estimator_and_bootstrap() -> None:
    assert pass_at_k(8, 0, 8) == 0.0 and pass_at_k(8, 8, 1) == 1.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(10, 3, 2) == pytest.approx(1 - (7 * 6) / (10 * 9))
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_at_k(4, 5, 1)
    ci = bootstrap_ci({str(i): [v] for i, v in enumerate([0.0, 1.0] * 50)})
    assert ci is not None and ci[0] < 0.5 < ci[1] and ci[1] - ci[0] < 0.3
    assert bootstrap_ci({"a": [1.0], "b": [1.0]}) == (1.0, 1.0)


def test_warmstart_is_deterministic_and_saves_atomically(tmp_path: object) -> None:
    a, info = warmstart.train(seed=3, steps=3, batch_size=8, log_every=0)
    b, _ = warmstart.train(seed=3, steps=3, batch_size=8, log_every=0)
    c, _ = warmstart.train(seed=4, steps=3, batch_size=8, log_every=0)
    assert warmstart.same_weights(a, b) and not warmstart.same_weights(a, c)
    # Mixing in the procedural code family changes the data, deterministically too.
    d, info_d = warmstart.train(seed=3, steps=3, batch_size=8, log_every=0, code_weight=0.5)
    assert not warmstart.same_weights(a, d)
    assert [part["teacher"]["slip"] for part in info_d["data"]][1].startswith("first systematic")
    with pytest.raises(ValueError, match="code_weight"):
        warmstart.default_mixtures(1.0)
    folder = tmp_path / "tiny"  # type: ignore[operator]
    warmstart.save(a, info, folder)
    warmstart.save(a, info, folder)  # replacing an existing checkpoint works
    loaded, tok = load_tiny(folder)
    assert warmstart.same_weights(a, loaded)
    manifest = json.loads((folder / "warmstart.json").read_text())
    assert manifest["seed"] == 3 and len(manifest["weights_sha256"]) == 64
    assert sorted(p.name for p in folder.parent.iterdir()) == ["tiny"]  # no temp leftovers
    with pytest.raises(FileNotFoundError, match="python -m flexmg.models.tiny.warmstart"):
        load_tiny(tmp_path / "missing")  # type: ignore[operator]


def test_sharpen_stage_continues_stage_one_and_can_start_from_its_checkpoint(
    tmp_path: object,
) -> None:
    """Stage 2 changes the weights; starting it from a saved stage-1 checkpoint
    (``--from-stage1``) gives the same model as the run in one go."""
    kwargs = {"seed": 3, "steps": 3, "batch_size": 8, "log_every": 0}
    stage1, info1 = warmstart.train(**kwargs)
    whole, info = warmstart.train(**kwargs, sharpen_steps=2)
    assert not warmstart.same_weights(stage1, whole)
    assert info["stage1_sha256"] == info1["stage1_sha256"] == warmstart.weights_sha256(stage1)
    assert info["sharpen_steps"] == 2 and info["prefix_sha256"] == info1["prefix_sha256"]
    folder = tmp_path / "stage1"  # type: ignore[operator]
    warmstart.save(stage1, info1, folder)
    out = tmp_path / "whole"  # type: ignore[operator]
    argv = ["--out", str(out), "--from-stage1", str(folder), "--no-eval", "--no-progress"]
    argv += ["--seed", "3", "--steps", "3", "--batch-size", "8", "--sharpen-steps", "2"]
    argv += ["--relay-weight", "0", "--multi-round-weight", "0", "--sharpen-code-weight", "0"]
    assert warmstart.main(argv) == 0
    rebuilt, _ = load_tiny(out)
    assert warmstart.same_weights(rebuilt, whole)
    manifest = json.loads((out / "warmstart.json").read_text())
    assert manifest["stage1_sha256"] == info1["stage1_sha256"]
    assert manifest["prefix_sha256"] == info1["prefix_sha256"]  # carried from stage 1's record
    # A code share in stage 2 only: stage 1's data are unchanged.
    coded, info_c = warmstart.train(**kwargs, sharpen_steps=1, sharpen_code_weight=0.5)
    assert info_c["stage1_sha256"] == info1["stage1_sha256"]
    assert len(info_c["sharpen_data"]) == len(info_c["data"]) + 1
    assert "first systematic" in info_c["sharpen_data"][-1]["teacher"]["slip"]
    # A prefix run stops inside stage 1 and never sharpens.
    prefix, info_p = warmstart.train(**kwargs, sharpen_steps=2, stop_after=2)
    assert info_p["final_loss"] == info_p["stage1_final_loss"]


def _manifest() -> dict[str, object]:
    return json.loads((TINY_ASSET_DIR / "warmstart.json").read_text())


def _stage1_data_settings(manifest: dict[str, object]) -> dict[str, object]:
    keys = ("seed", "batch_size", "code_weight", "relay_weight", "multi_round_weight")
    return {k: manifest[k] for k in keys}


def test_warmstart_prefix_data_are_the_shipped_runs() -> None:
    """The token ids of the 200-step prefix's batches are those the shipped run trained on.

    No training and no floats: any drift of the warm start's data (teacher, tasks,
    tokenizer, or what the envs it plays on say) fails here, on every CPU, in seconds.
    """
    manifest = _manifest()
    digest = warmstart.prefix_data_sha256(**_stage1_data_settings(manifest))  # type: ignore[arg-type]
    assert digest == manifest["prefix_data_sha256"], (
        "the warm start's data drifted from the shipped run's (a teacher, task source, "
        "tokenizer or env change); pin the historic behaviour (flexmg.models.tiny.historic)"
    )


def test_historic_env_judges_as_math_v1_and_leaves_the_registered_env_alone() -> None:
    """The warm start's multi-round math: an unboxed right answer does not solve the task
    and gets v1's feedback; the env everyone else makes (v2) is solved by it."""
    from flexmg.models.tiny.historic import historic_env

    def play(env: Any, text: str) -> tuple[bool, str]:
        env.reset(seed=3)
        env.step(text.format(env.task.answer))
        return env.terminations["solver"], env.observe("solver")["feedback"]

    old, new = historic_env("math-1agent", horizon=2), flexmg.make("math-1agent", horizon=2)
    assert play(old, "It is {}.") == (
        False,
        "No single final answer was found (no_boxed): put exactly one answer inside \\boxed{}.",
    )
    assert play(new, "It is {}.")[0] is True  # v2: the value counts however it is written
    assert play(old, "\\boxed{{{}}}")[0] is True
    wrong = f"The final answer {old.task.answer}7 is incorrect. Try again."
    assert play(old, "\\boxed{{{}7}}") == (False, wrong)
    code = historic_env("code-1agent")  # not a math-family reward: made as it is today
    assert type(code._reward) is type(flexmg.make("code-1agent")._reward)
    parts = [
        part for part, _ in warmstart.default_mixtures(relay_weight=0.1, multi_round_weight=0.5)
    ]
    assert [getattr(p, "historic", None) for p in parts] == [None, True, True]
    assert not warmstart.multi_round_mixture().historic  # the public mixtures play today's envs


def _cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (for messages)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return "an unknown CPU"


def _shipped() -> tuple[object, object]:
    if not (TINY_ASSET_DIR / "model.safetensors").is_file():
        pytest.fail(f"the warm-started tiny model is missing from {TINY_ASSET_DIR}")
    return load_tiny()


def test_shipped_checkpoint_formats_and_has_room_to_learn() -> None:
    """Step 0 on held-out prompts of the real env: well-formed answers, greedy << pass@8."""
    model, _ = _shipped()
    result = warmstart.measure(model, "math-2agent", prompts=48, k=8)  # held-out prompts
    assert result["prompts"] == 48
    assert result["greedy_format_ok"]["mean"] >= 0.9, result
    assert result["sampled_format_ok"]["mean"] >= 0.85, result
    # Greedy follows the teacher's slip; sampling finds the right value far more often.
    greedy, ceiling = result["greedy_correct"]["mean"], result["pass@8_correct"]["mean"]
    assert ceiling >= 2 * greedy and ceiling >= greedy + 0.08, result
    manifest = json.loads((TINY_ASSET_DIR / "warmstart.json").read_text())
    assert {"seed", "steps", "data", "weights_sha256"} <= set(manifest)


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
    # The warm-started model shows its work (``03+09=12``), then (mostly) boxes the number.
    answer = r"(\d\d[-+]\d\d=-?\d+)|(\d\d[-+]\d\d=-?\d+ )?\\boxed\{-?\d+\}"
    assert len(out) == 3 and all(re.fullmatch(answer, o) for o in out), out
    by_name = LLMAgent("tiny", role="solver", greedy=True, critic_hidden=(8,))
    assert by_name.act(obs[:1]) == out[:1]  # fresh adapters are the identity
    assert isinstance(by_name(obs[2]), str)
    with pytest.raises(TypeError, match="list of observation"):
        agent.act(obs[0])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="only apply"):
        LLMAgent(policy, max_new_tokens=4)


@pytest.mark.slow
def test_warmstart_reproduces_the_shipped_checkpoint_prefix_exactly() -> None:
    """`python -m flexmg.models.tiny.warmstart` (defaults) retraces the shipped run bit for bit.

    The whole rebuild (both stages) takes over an hour on one core (``--check`` runs
    it); CI checks the first ``PREFIX_STEPS`` steps of stage 1 against the hashes in
    ``warmstart.json`` (the shipped run's, and the other CPU kinds' it was measured on).
    """
    _shipped()
    manifest = _manifest()
    settings = {k: manifest[k] for k in warmstart.DEFAULTS if k in manifest}
    assert settings == {k: manifest.get(k) for k in warmstart.DEFAULTS}, "rebuild settings"
    model, info = warmstart.train(**settings, log_every=0, stop_after=warmstart.PREFIX_STEPS)
    assert info["prefix_data_sha256"] == manifest["prefix_data_sha256"], "the data drifted"
    # PyTorch's float kernels differ between CPU models: the shipped run's hash holds on
    # the CPU that built it (the CI machines'), the others on the CPUs they were measured on.
    known = {manifest["prefix_sha256"], *manifest.get("prefix_sha256_other_cpus", {}).values()}
    assert info["prefix_sha256"] in known, (
        "the 200-step prefix differs from every recorded one, on the shipped run's data: "
        "either the model or its training loop changed, or this CPU computes floats unlike "
        "those it was measured on (this one runs "
        f"{torch.backends.cpu.get_cpu_capability()} kernels on {_cpu_model()})"
    )
    assert warmstart.weights_sha256(model) == info["prefix_sha256"]
