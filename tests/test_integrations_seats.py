"""The seat driver on the real math and code envs (code with the real local sandbox)."""

import pytest

import flexmg
from flexmg.integrations.seats import (
    EpisodeResult,
    observation_to_messages,
    play_batch,
    play_episode,
)
from flexmg.models.prompts import chat_messages


def task_of(env_id: str, seed: int, **kwargs):
    env = flexmg.make(env_id, **kwargs)
    try:
        env.reset(seed=seed)
        return env.task
    finally:
        env.close()


def fenced(code: str) -> str:
    return f"My solution:\n```python\n{code}\n```"


def test_messages_are_the_prompt_flexmgs_chat_agents_see():
    obs = {
        "task": "What is 2+3?",
        "role": "verifier",
        "instructions": "Check the solver.",
        "round": 1,
        "context": "[solver]: \\boxed{5}",
        "feedback": "wrong last time",
    }
    assert observation_to_messages(obs) == chat_messages(obs)
    (merged,) = observation_to_messages(obs, system=False)
    assert merged["role"] == "user"
    assert merged["content"].startswith("Check the solver.\n\n")
    assert "[solver]: \\boxed{5}" in merged["content"] and "wrong last time" in merged["content"]


def test_messages_survive_hostile_observations():
    weird = {"task": "\ud800" * 3 + "x" * 100_000, "role": None, "context": 7}
    messages = observation_to_messages(weird)
    assert messages[0]["role"] == "system" and len(messages[1]["content"]) > 100_000
    with pytest.raises(TypeError, match="expects a flexmg observation"):
        observation_to_messages("not an observation")


def test_math_episode_rewards_transcripts_and_segments():
    answer = task_of("math-2agent", 7).answer
    seen = {}

    def solver(messages):
        seen["solver"] = messages
        return f"The answer is \\boxed{{{answer}}}"

    def verifier(messages):
        seen["verifier"] = messages
        return f"I agree: \\boxed{{{answer}}}"

    result = play_episode("math-2agent", {"solver": solver, "verifier": verifier}, seed=7)
    assert isinstance(result, EpisodeResult)
    assert result.env_id == "math-2agent" and result.seed == 7
    assert result.score == 1.0 and result.metrics["success"] is True
    assert result.rewards == {"solver": 1.0, "verifier": 1.0}
    assert [(s.role, s.round) for s in result.segments] == [("solver", 0), ("verifier", 0)]
    assert result.segments[1].messages == seen["verifier"]
    # the verifier saw the solver's message through the env's context
    assert "[solver]: The answer is" in seen["verifier"][-1]["content"]
    chat = result.transcripts["verifier"]
    assert [m["role"] for m in chat] == ["system", "user", "assistant"]
    assert chat[-1]["content"] == f"I agree: \\boxed{{{answer}}}"


def test_multi_round_episode_sums_rewards_to_the_score():
    answer = task_of("math-1agent", 3, horizon=3).answer
    replies = iter(["I am not sure, \\boxed{-987654}", f"\\boxed{{{answer}}}"])
    result = play_episode(
        "math-1agent", {"solver": lambda m: next(replies)}, seed=3, env_kwargs={"horizon": 3}
    )
    assert result.metrics["rounds"] == 2 and result.score == 1.0
    assert [s.round for s in result.segments] == [0, 1]
    assert sum(result.rewards.values()) == pytest.approx(result.score)
    roles = [m["role"] for m in result.transcripts["solver"]]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    # round 2's prompt carries the env's feedback on round 1
    assert "Round 1:" in result.segments[1].messages[-1]["content"]


def test_code_episode_with_the_real_local_sandbox():
    task = task_of("code-2agent", 3, sandbox="local")
    result = play_episode(
        "code-2agent",
        {"coder": lambda m: fenced(task.answer), "reviewer": lambda m: fenced(task.answer)},
        seed=3,
        env_kwargs={"sandbox": "local"},
    )
    assert result.score == 1.0
    assert result.metrics["tests_passed"] == result.metrics["tests_total"] > 0
    entry = task.meta["entry_point"]
    wrong = fenced(f"def {entry}(*args, **kwargs):\n    return None")
    result = play_episode(
        "code-2agent",
        {"coder": lambda m: wrong, "reviewer": lambda m: wrong},
        seed=3,
        env_kwargs={"sandbox": "local"},
    )
    assert result.score < 1.0 and result.metrics["success"] is False


def test_env_truncation_is_what_the_segment_keeps():
    long = "\u00e9" * 50 + "\ud800"
    result = play_episode(
        "math-1agent", {"solver": lambda m: long}, seed=0, env_kwargs={"max_action_chars": 20}
    )
    (segment,) = result.segments
    assert segment.text == "\u00e9" * 20
    assert result.transcripts["solver"][-1]["content"] == segment.text


def test_env_object_is_left_open_and_env_id_comes_from_its_name():
    env = flexmg.make("math-1agent")
    result = play_episode(env, {"solver": lambda m: "no idea"}, seed=2)
    assert result.score == 0.0 and result.env_id == env.metadata["name"]
    env.reset(seed=2)  # still usable
    env.close()


def test_batch_groups_turns_by_role_and_keeps_seed_order():
    seeds = [11, 5, 8]
    answers = {s: task_of("math-2agent", s).answer for s in seeds}
    calls = []

    def solver(batch):
        calls.append(("solver", len(batch)))
        out = []
        for messages in batch:
            seed = next(s for s in seeds if flexmg_task_prompt(s) in messages[-1]["content"])
            out.append(f"\\boxed{{{answers[seed]}}}" if seed != 5 else "\\boxed{-1}")
        return out

    def verifier(batch):  # the graded role: repeats the solver's message
        calls.append(("verifier", len(batch)))
        return [solver_said(messages) for messages in batch]

    results = play_batch("math-2agent", {"solver": solver, "verifier": verifier}, seeds=seeds)
    assert [r.seed for r in results] == seeds
    assert [r.score for r in results] == [1.0, 0.1, 1.0]  # a wrong boxed answer: format only
    assert calls == [("solver", 3), ("verifier", 3)]
    single = play_episode(
        "math-2agent",
        {"solver": lambda m: solver([m])[0], "verifier": solver_said},
        seed=8,
    )
    assert single.transcripts == results[2].transcripts


def solver_said(messages):
    content = messages[-1]["content"]
    return content[content.rindex("[solver]: ") + len("[solver]: ") :].split("\n")[0]


_PROMPTS: dict[int, str] = {}


def flexmg_task_prompt(seed: int) -> str:
    if seed not in _PROMPTS:
        _PROMPTS[seed] = task_of("math-2agent", seed).prompt
    return _PROMPTS[seed]


def test_programmer_errors_are_clear():
    with pytest.raises(KeyError, match=r"missing \['verifier'\], unknown \['critic'\]"):
        play_episode("math-2agent", {"solver": str, "critic": str})
    with pytest.raises(TypeError, match="must return a str"):
        play_episode("math-1agent", {"solver": lambda m: None}, seed=0)
    with pytest.raises(ValueError, match="list of 2 texts"):
        play_batch("math-1agent", {"solver": lambda b: ["one"]}, seeds=[0, 1])
    with pytest.raises(TypeError, match="sequence of ints"):
        play_batch("math-1agent", {"solver": lambda b: b}, seeds=3)
    with pytest.raises(flexmg.UnknownEnvError):
        play_episode("no-such-env", {})


def test_batch_follows_per_round_graphs_that_differ_between_envs():
    from flexmg.tasks import ListTaskSource, Task

    def graph(round_index, transcript):
        swap = round_index > 0 and transcript[0].action == "swap"
        return flexmg.DependencyGraph.full_chain(["b", "a"] if swap else ["a", "b"])

    workflow = flexmg.Workflow(
        name="swap",
        roles={"a": "Say the task's word.", "b": "Say ok."},
        reward=lambda task, transcript: 0.0,
        tasks=ListTaskSource([Task(id="s", prompt="swap"), Task(id="k", prompt="keep")]),
        graph=graph,
        horizon=2,
    )
    flexmg.register("seats-swap-v0", workflow)
    try:
        check_batch_groups_by_waiting_role()
    finally:
        del flexmg.registry["seats-swap-v0"]


def check_batch_groups_by_waiting_role():
    calls = []

    def role_fn(name):
        def act(batch):
            calls.append((name, len(batch)))
            return ["swap" if "Task:\nswap" in m[-1]["content"] else "keep" for m in batch]

        return act

    seeds = list(range(6))
    results = play_batch("seats-swap", {"a": role_fn("a"), "b": role_fn("b")}, seeds=seeds)
    orders = {tuple(s.role for s in r.segments) for r in results}
    assert orders == {("a", "b", "b", "a"), ("a", "b", "a", "b")}
    # round 2: the envs wait on different roles, so each role is asked for its own group
    assert calls[:2] == [("a", 6), ("b", 6)] and len(calls) > 4
    assert sum(n for r, n in calls if r == "a") == sum(n for r, n in calls if r == "b") == 12
