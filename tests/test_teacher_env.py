"""Teachers that play the real env: relay transcripts and retry rounds (warm-start data)."""

from __future__ import annotations

import random

import pytest

import flexmg
from flexmg.envs.families.relay import HIDDEN, RelayTeacher, carries_problem, relay_rate
from flexmg.envs.families.teachers import MathTeacher
from flexmg.models.prompts import compact_prompt
from flexmg.models.tiny import warmstart
from flexmg.models.tiny.transcripts import env_episode
from flexmg.tasks import Task

TASK = Task(id="t", prompt="What is 19 - 6?", answer="13")


def _number(action: str) -> str:
    """The value an action gives: ``19-06=13 \\boxed{13}``, ``19-06=13`` and ``\\boxed{13}`` give 13."""
    last = action.rsplit(" ", 1)[-1]
    return last.rpartition("=")[2].removeprefix("\\boxed{").removesuffix("}")


def _replayed_prompts(env_id: str, horizon: int, task: Task, actions: list[str]) -> list[str]:
    """The compact prompts a fresh env shows when stepped with ``actions``."""
    env = flexmg.make(env_id, horizon=horizon)
    env.reset(seed=123, options={"task": task})
    prompts = []
    for action in actions:
        prompts.append(compact_prompt(env.observe(env.agent_selection)))
        env.step(action)
    assert all(env.terminations.values())
    return prompts


@pytest.mark.parametrize(
    ("env_id", "horizon", "teacher"),
    [
        ("relay-2agent", 1, RelayTeacher()),
        ("relay-3agent", 1, RelayTeacher()),
        ("relay-2agent", 2, RelayTeacher()),
        ("math-2agent", 2, MathTeacher()),
        ("math-3agent", 3, MathTeacher()),
    ],
)
def test_transcripts_are_the_env_observations(env_id: str, horizon: int, teacher: object) -> None:
    env = flexmg.make(env_id, horizon=horizon)
    rng = random.Random(0)
    source = env.task_source
    lengths = set()
    for k in range(40):
        task = source.get(k)
        pairs = env_episode(env, task, teacher, rng)  # type: ignore[arg-type]
        prompts = _replayed_prompts(env_id, horizon, task, [a for _, a in pairs])
        assert [p for p, _ in pairs] == prompts
        lengths.add(len(pairs))
    roles = len(env.possible_agents)
    # Several episodes go to a second round when the horizon allows it.
    assert roles in lengths and (horizon == 1 or max(lengths) > roles)


def test_relay_teacher_rates() -> None:
    teacher, rng = RelayTeacher(), random.Random(1)
    env = flexmg.make("relay-2agent")
    relayed, right_when_relayed, right_otherwise, boxed = [], [], [], []
    for k in range(1500):
        task = env.task_source.get(k)
        (reader_prompt, message), (solver_prompt, answer) = env_episode(env, task, teacher, rng)
        assert reader_prompt == f"Q:{task.prompt}\n[reader]:"
        assert solver_prompt == f"Q:{HIDDEN}\n[reader]: {message}\n[solver]:"
        relayed.append(carries_problem(message, task.prompt))
        boxed.append(answer.endswith("}"))
        (right_when_relayed if relayed[-1] else right_otherwise).append(
            _number(answer) == task.answer
        )
    assert abs(sum(relayed) / len(relayed) - teacher.p_relay) < 0.04
    assert abs(sum(right_when_relayed) / len(right_when_relayed) - teacher.p_right) < 0.07
    assert sum(right_otherwise) / len(right_otherwise) < 0.05  # a guess
    assert abs(sum(boxed) / len(boxed) - teacher.p_format) < 0.02


def test_relay_courier_copies_its_predecessor() -> None:
    teacher, rng = RelayTeacher(p_relay=1.0), random.Random(2)
    env = flexmg.make("relay-3agent")
    copies = []
    for k in range(600):
        (_, reader), (courier_prompt, courier), _ = env_episode(env, TASK, teacher, rng)
        assert courier_prompt.endswith(f"[reader]: {reader}\n[courier]:")
        copies.append(courier == reader)
    assert abs(sum(copies) / len(copies) - teacher.p_copy) < 0.04


def test_retry_round_uses_the_feedback() -> None:
    teacher, rng = MathTeacher(), random.Random(3)
    env = flexmg.make("math-1agent", horizon=2)
    retries, right = 0, 0
    for _ in range(1500):
        pairs = env_episode(env, TASK, teacher, rng)
        if len(pairs) == 1:
            continue
        (_, first), (prompt, second) = pairs
        assert "F:" in prompt and f"[solver]: {first}" in prompt  # feedback and round 1 shown
        if "is incorrect" in prompt:
            assert _number(second) != _number(first)
        retries += 1
        right += _number(second) == TASK.answer
    assert abs(right / retries - teacher.p_retry_right) < 0.05


def test_carries_problem_and_relay_rate() -> None:
    assert carries_problem("What is 19 - 6?", TASK.prompt)
    assert carries_problem("19-6", TASK.prompt)
    assert carries_problem("the problem: 19 - 6 (subtract)", TASK.prompt)
    assert not carries_problem("6 - 19", TASK.prompt)
    assert not carries_problem("19 + 6", TASK.prompt)
    assert not carries_problem("\\boxed{13}", TASK.prompt)
    assert not carries_problem("ok", TASK.prompt)
    assert carries_problem("say  hello world", "hello world")  # no numbers: words count
    assert relay_rate([], []) == 0.0
    with pytest.raises(ValueError):
        relay_rate(["a"], [])


def test_validation_errors_are_clear() -> None:
    with pytest.raises(ValueError, match=r"RelayTeacher\.p_relay must be a probability"):
        RelayTeacher(p_relay=1.2)
    with pytest.raises(ValueError, match=r"MathTeacher\.p_retry_right must be a probability"):
        MathTeacher(p_retry_right=-0.1)
    with pytest.raises(ValueError, match="relay_weight must be in"):
        warmstart.default_mixtures(relay_weight=1.0)
    with pytest.raises(ValueError, match="multi_round_weight must be in"):
        warmstart.default_mixtures(multi_round_weight=-0.5)
    with pytest.raises(ValueError, match="code_weight \\+ relay_weight must be < 1"):
        warmstart.default_mixtures(code_weight=0.5, relay_weight=0.5)
    with pytest.raises(ValueError, match="horizon >= 2"):
        warmstart.multi_round_mixture(horizon=1)


def test_zero_weights_leave_the_math_data_unchanged() -> None:
    def batches(parts: list) -> list:
        return warmstart._length_buckets(*zip(*parts, strict=True), 4, random.Random(5))

    assert batches(warmstart.default_mixtures()) == batches([(warmstart.math_mixture(), 1.0)])
    parts = warmstart.default_mixtures(relay_weight=0.2, multi_round_weight=0.5)
    assert [round(w, 6) for _, w in parts] == [0.4, 0.4, 0.2]
    described = [part.describe() for part, _ in parts]
    assert described[1]["horizon"] == 2 and described[2]["envs"] == ["relay-2agent", "relay-3agent"]
    assert described[2]["teacher"]["p_relay"] == 0.3


def test_warmstart_flags_and_manifest() -> None:
    assert {"relay_weight", "multi_round_weight"} <= set(warmstart.DEFAULTS)
    _, info = warmstart.train(
        seed=0, steps=1, batch_size=4, log_every=0, relay_weight=0.5, multi_round_weight=0.5
    )
    assert info["relay_weight"] == 0.5 and info["multi_round_weight"] == 0.5
    assert [d.get("horizon", 1) for d in info["data"]] == [1, 2, 1]


def test_fine_tune_continues_a_model_deterministically() -> None:
    from flexmg.models.tiny.model import build_tiny_model, tiny_config

    def tuned(seed: int):
        cfg = tiny_config(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                          num_attention_heads=2, num_key_value_heads=2)  # fmt: skip
        model = build_tiny_model(seed=0, config=cfg)
        info = warmstart.fine_tune(model, [(warmstart.relay_mixture(), 1.0)], 2, 4, seed=seed)
        return model, info

    (a, info), (b, _), (c, _) = tuned(0), tuned(0), tuned(1)
    assert warmstart.same_weights(a, b) and not warmstart.same_weights(a, c)
    assert info["steps"] == 2 and info["data"][0]["envs"] == ["relay-2agent", "relay-3agent"]
    with pytest.raises(ValueError, match="fine_tune needs steps >= 0"):
        warmstart.fine_tune(a, [(warmstart.relay_mixture(), 1.0)], steps=-1)
