"""The test-first family: the tester's tests, run in the real sandbox, are the coder's only spec."""

from __future__ import annotations

import re

import pytest

import flexmg
from flexmg.envs.families.testfirst import NEUTRAL_NAME, TestFirstConfig, pair_oracle
from flexmg.test import api_test

# the packaged HumanEval-style set has 74 tasks; seeds 0..N-1 sample among them
EPISODES = 40
STUBS = ("None", "args[0] if args else None", "0", "''", "[]", "False", "True")


@pytest.fixture(scope="module")
def env():
    made = flexmg.make("code-testfirst", sandbox="local")
    yield made
    made.close()


def _coder_stub(value: str) -> str:
    """A coder that knows only the signature: returns a constant (or its first argument)."""
    return f"```python\ndef {NEUTRAL_NAME}(*args, **kwargs):\n    return {value}\n```"


def _play(env, seed: int, tester, coder):
    env.reset(seed=seed)
    for role in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        obs = env.observe(role)
        env.step(tester(obs, env.task) if role == "tester" else coder(obs, env.task))
    return env.episode_metrics


@pytest.mark.slow
def test_pettingzoo_api_test_passes() -> None:
    report = api_test("code-testfirst", num_cycles=2, verbose=False, sandbox="local")
    assert report.passed, report.summary()


def test_the_coder_sees_the_signature_only_under_a_neutral_name(env) -> None:
    for seed in range(10):
        env.reset(seed=seed)
        coder, tester = env.observe("coder")["task"], env.observe("tester")["task"]
        original = env.task.meta["original_name"]
        assert NEUTRAL_NAME in coder and original not in coder and '"""' not in coder
        assert ">>>" in tester and original not in tester


def test_the_oracle_team_scores_one(env) -> None:
    def tester(obs, task):
        return pair_oracle(task, "tester", "", graded=False)

    def coder(obs, task):
        return pair_oracle(task, "coder", "", graded=True)

    runs = [_play(env, seed, tester, coder) for seed in range(EPISODES)]
    assert sum(m["score"] for m in runs) / len(runs) == pytest.approx(1.0)
    assert all(m["rounds"] == 1 for m in runs)


def test_the_tests_bite_the_coder_sees_which_failed_and_revises(env) -> None:
    def tester(obs, task):
        return pair_oracle(task, "tester", "", graded=False)

    def coder(obs, task):  # a stub first; the solution once the feedback names a failure
        if "FAIL: assert" in obs["feedback"]:
            return pair_oracle(task, "coder", "", graded=True)
        return _coder_stub("None")

    for seed in range(5):
        metrics = _play(env, seed, tester, coder)
        assert metrics["rounds"] == 2 and metrics["success"]
        first = env.transcript[1]
        assert first.role == "coder" and first.info["tests_passed"] == 0


@pytest.mark.parametrize(
    "mute",
    [
        "",
        pytest.param("Looks fine to me.", marks=pytest.mark.slow),
        pytest.param("```python\n# nothing to test\n```", marks=pytest.mark.slow),
    ],
)
def test_a_mute_tester_leaves_the_coder_at_chance(env, mute: str) -> None:
    # chance for a coder that knows only the signature: the best constant or echo stub
    best = 0.0
    for value in STUBS:
        runs = [
            _play(env, seed, lambda o, t: mute, lambda o, t, v=value: _coder_stub(v))
            for seed in range(EPISODES)
        ]
        assert not any("FAIL:" in m["tester_feedback"] for m in runs)  # nothing was tested
        best = max(best, sum(m["success"] for m in runs) / len(runs))
    assert best <= 1 / EPISODES


@pytest.mark.parametrize(
    "hostile",
    [
        "x" * 200_000,
        "```python\nimport os\nos.system('echo pwned')\nassert True\n```",
        pytest.param("```python\nwhile True:\n    pass\n```", marks=pytest.mark.slow),
        "```python\nimport sys; sys.exit(0)\n```",
        "```python\ndef mystery_fn(*a):\n    return 1/0\nassert mystery_fn() == 1\n```",
        "\u202e\U0001f600 ```python\nassert '\ud800' == 1\n```",
        "```python\n" + "(" * 5000 + "\n```",
    ],
)
def test_hostile_text_never_crashes_and_is_scored_with_a_reason(env, hostile: str) -> None:
    metrics = _play(env, 3, lambda o, t: hostile, lambda o, t: hostile)
    assert metrics["score"] < 1.0
    assert metrics["status"] and metrics["tester_feedback"]


def test_a_humaneval_file_loads_renamed() -> None:
    path = "/work/shared/data/HumanEval.jsonl.gz"
    pytest.importorskip("gzip")
    import os

    if not os.path.exists(path):
        pytest.skip("no HumanEval file here")
    env = flexmg.make("code-testfirst", tasks=path, sandbox="local")
    try:
        env.reset(seed=0)
        assert env.task.meta["entry_point"] == NEUTRAL_NAME
        assert not re.search(rf"\b{env.task.meta['original_name']}\b", env.observe("coder")["task"])
        env.step(pair_oracle(env.task, "tester", "", graded=False))
        env.step(pair_oracle(env.task, "coder", "", graded=True))
        assert env.episode_metrics["success"]
    finally:
        env.close()


def test_config_validates() -> None:
    with pytest.raises(ValueError, match="must name a code task set"):
        TestFirstConfig.of({"source": " "})
    with pytest.raises(ValueError, match="bad TestFirstConfig fields"):
        TestFirstConfig.of({"size": 3})
