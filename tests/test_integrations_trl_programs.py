"""The TRL programs under docs/integrations/ run end to end (a real GRPOTrainer, 2 steps),
and the reward they train on grades the value a chat model writes in plain text."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

import flexmg
from helpers import require_extra, save_tiny_chat_model

require_extra("trl", "trl")

from flexmg.integrations.trl import (  # noqa: E402
    ValueRelay,
    make_environment_factory,
    text_reward,
)

DOCS = Path(__file__).resolve().parent.parent / "docs" / "integrations"


def program(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gold(env_id: str, seed: int) -> str:
    env = flexmg.make(env_id)
    env.reset(seed=seed)
    answer = env.task.answer
    env.close()
    return answer


def test_plain_text_answers_are_graded_by_their_value():
    Env = make_environment_factory(
        "math-2agent", role="solver", others={"verifier": ValueRelay("solver")}, plain_text=True
    )
    assert not hasattr(Env, "get_reward")  # TRL would add it as a second reward column
    envs = [Env(), Env(), Env(), Env()]
    for seed, env in enumerate(envs):
        env.reset(seed=seed)
    right = [f"First I add them.\nThe answer is {gold('math-2agent', s)}." for s in (0, 1)]
    completions = [
        [{"role": "assistant", "content": right[0]}],
        right[1],  # a plain string completion
        [{"role": "assistant", "content": "The answer is -98765."}],
        [{"role": "assistant", "content": "I cannot tell."}],
    ]
    rewards = text_reward(completions, environments=envs)
    assert rewards[:2] == [1.0, 1.0] and rewards[2] < 1.0 and rewards[3] < 1.0
    with pytest.raises(ValueError, match="plain_text=True"):
        text_reward(["x"])


def test_value_relay_boxes_the_last_value():
    relay = ValueRelay("solver")
    says = [{"role": "user", "content": "Task:\nWhat is 2 + 2?\n\n[solver]: 2 + 2 = 4, so 4."}]
    assert relay(says) == "\\boxed{4}"
    boxed = [{"role": "user", "content": "[solver]: \\boxed{1,250} since 3 + 1 = 4"}]
    assert relay(boxed) == "\\boxed{1250}"  # a box wins over later numbers
    assert relay([{"role": "user", "content": "no solver here 12"}]) == "No answer."
    assert relay([]) == "No answer."


@pytest.mark.slow  # two GRPO steps of a real trainer per route (a tiny model; tens of seconds)
@pytest.mark.parametrize("name", ["trl_rollout", "trl_environment"])
def test_the_documented_programs_train(tmp_path, name):
    model_dir = save_tiny_chat_model(tmp_path / "model")
    out = tmp_path / "curve.json"
    args = ["--model", str(model_dir), "--tokenizer", str(model_dir / "tokenizer")]
    args += ["--steps", "2", "--prompts", "2", "--generations", "2", "--max-tokens", "8"]
    args += ["--out", str(out), "--output-dir", str(tmp_path / "run")]
    curve = program(name).main(args)
    assert len(curve) == 2 and all(0.0 <= r <= 1.0 for r in curve)
    assert json.loads(out.read_text())["reward"] == curve


def test_env_kwargs_are_given_one_way_everywhere():
    from flexmg.integrations.trl import make_rollout_func

    rollout = make_rollout_func(
        "math-1agent", role="solver", others={}, seeds=[0], env_kwargs={"horizon": 2}
    )
    assert rollout._env_kwargs == {"horizon": 2, "split": "train"}
    with pytest.raises(ValueError, match=r"\['horizon'\] given twice"):
        make_rollout_func(
            "math-1agent", role="solver", others={}, seeds=[0], env_kwargs={"horizon": 2}, horizon=3
        )
    Env = make_environment_factory(
        "math-1agent", role="solver", others={}, env_kwargs={"horizon": 2}
    )
    assert "Round" not in Env().reset(seed=0)  # built with the kwargs, first round
