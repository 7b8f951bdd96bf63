"""`flexmg serve` answers OpenEnv's own client: a real server process on 127.0.0.1."""

import json
import threading
import time
import urllib.request

import pytest

import flexmg
from helpers import flexmg_server, require_extra

GenericEnvClient = require_extra("openenv.core", "openenv").GenericEnvClient


def http(url: str, body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


@pytest.fixture(scope="module")
def server():
    with flexmg_server("math-2agent", "--max-sessions", "4", "max_action_chars=2000") as url:
        yield url


def answer_of(seed: int) -> str:
    return answer_of_env("math-2agent", seed)


@pytest.mark.slow  # a real server process (tens of seconds on a busy machine)
def test_schema_and_http_reset(server):
    schema = http(f"{server}/schema")
    assert "message" in schema["action"]["properties"]
    assert {"role", "messages", "rewards", "episode_rewards", "infos"} <= set(
        schema["observation"]["properties"]
    )
    reset = http(f"{server}/reset", {"seed": 3})
    assert reset["observation"]["role"] == "solver" and reset["done"] is False
    # HTTP /step is stateless in OpenEnv: the answer says so instead of failing
    step = http(f"{server}/step", {"action": {"message": "hi"}})
    assert "call reset first" in step["observation"]["error"]


@pytest.mark.slow  # a real server process (tens of seconds on a busy machine)
def test_an_episode_over_the_websocket_with_openenvs_client(server):
    seed = 7
    answer = answer_of(seed)
    with GenericEnvClient(base_url=server).sync() as client:
        first = client.reset(seed=seed)
        obs = first.observation
        assert obs["role"] == "solver" and not first.done
        assert [m["role"] for m in obs["messages"]] == ["system", "user"]
        step = client.step({"message": f"\\boxed{{{answer}}}"})
        assert step.observation["role"] == "verifier" and step.reward == 0.0
        assert "[solver]: \\boxed{" in step.observation["messages"][-1]["content"]
        last = client.step({"message": f"Agreed: \\boxed{{{answer}}}", "role": "verifier"})
        assert last.done and last.reward == 1.0
        o = last.observation
        assert o["role"] == "" and o["score"] == 1.0 and o["metrics"]["success"] is True
        assert o["rewards"] == {"solver": 1.0, "verifier": 1.0} == o["episode_rewards"]
        assert o["infos"]["verifier"]["team_score"] == 1.0
        state = client.state()
        assert state["done"] and state["seed"] == seed and state["step_count"] == 2
        assert [t["role"] for t in state["turns"]] == ["solver", "verifier"]


@pytest.mark.slow  # a real server process (tens of seconds on a busy machine)
def test_the_server_declines_per_message_compression(server):
    # OpenEnv's client offers permessage-deflate; the server plays on uncompressed (cheaper).
    from websockets.sync.client import connect

    with connect(server.replace("http://", "ws://") + "/ws", compression="deflate") as ws:
        assert ws.protocol.extensions == []
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(ws.recv(timeout=30))["data"]["observation"]["role"] == "solver"


@pytest.mark.slow  # a real server process (tens of seconds on a busy machine)
def test_bad_actions_get_openenv_errors_and_the_session_goes_on(server):
    with GenericEnvClient(base_url=server).sync() as client:
        client.reset(seed=1)
        for bad in ({"msg": "hi"}, {"message": 5}, {"message": "x", "extra": 1}):
            with pytest.raises(RuntimeError, match="VALIDATION_ERROR|validation"):
                client.step(bad)
        wrong_role = client.step({"message": "hi", "role": "verifier"})
        assert "it is role 'solver''s turn" in wrong_role.observation["error"]
        hostile = "\u202e\U0001f600" * 30_000 + "\x00```python\nimport os\n```"
        step = client.step({"message": hostile})
        assert step.observation["role"] == "verifier" and not step.observation["error"]
        assert step.observation["infos"]["solver"]["action_truncated"] is True
        done = client.step({"message": "\\boxed{-1}"})
        assert done.done and done.observation["score"] < 1.0
        over = client.step({"message": "more"})
        assert "episode is over" in over.observation["error"]
        assert client.reset(seed=2).observation["role"] == "solver"


@pytest.mark.slow  # a real server process (tens of seconds on a busy machine)
def test_concurrent_sessions_are_independent(server):
    results: dict[int, float] = {}

    def play(seed: int, right: bool) -> None:
        answer = answer_of(seed) if right else "-12345"
        with GenericEnvClient(base_url=server).sync() as client:
            client.reset(seed=seed)
            client.step({"message": f"\\boxed{{{answer}}}"})
            time.sleep(0.2)  # let the other session move in between
            results[seed] = client.step({"message": f"\\boxed{{{answer}}}"}).observation["score"]

    threads = [threading.Thread(target=play, args=(s, s % 2 == 0)) for s in (10, 11, 12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert results[10] == results[12] == 1.0 and results[11] < 1.0


@pytest.mark.slow  # a real server process (tens of seconds on a busy machine)
def test_flexmg_session_plays_and_keeps_field_paths_in_refusals(server):
    from flexmg.integrations.openenv_client import FlexMGSession, ServerRefusedError

    kwargs = {"max_action_chars": 2000}
    with FlexMGSession(server, env_id="math-2agent-v3", env_kwargs=kwargs) as session:
        answer = answer_of(3)
        assert session.reset(seed=3).observation["role"] == "solver"
        with pytest.raises(ServerRefusedError, match=r"message: Input should be a valid string"):
            session.step({"message": 5})
        with pytest.raises(ServerRefusedError, match=r"extra: Extra inputs are not permitted"):
            session.step({"message": "x", "extra": 1})
        with pytest.raises(ServerRefusedError, match=r"message: Field required"):
            session.step({"msg": "x"})
        with pytest.raises(TypeError, match="action must be a dict"):
            session.step("just text")  # type: ignore[arg-type]
        step = session.step({"message": f"\\boxed{{{answer}}}"})  # the session went on
        last = session.step({"message": f"\\boxed{{{answer}}}", "role": "verifier"})
        assert step.observation["role"] == "verifier" and last.done and last.reward == 1.0
        assert session.state()["step_count"] == 2


@pytest.mark.slow  # a real server process (tens of seconds on a busy machine)
def test_a_client_told_another_env_or_kwargs_is_refused(server):
    from flexmg.integrations.openenv_client import (
        FlexMGSession,
        ServerMismatchError,
        server_identity,
    )
    from flexmg.integrations.trl import make_environment_factory

    assert server_identity(server) == {
        "env_id": "math-2agent",
        "env_kwargs": {"max_action_chars": 2000},
        "ws": "lean",
    }
    with pytest.raises(ServerMismatchError, match="plays math-2agent-v3 with kwargs"):
        FlexMGSession(server, env_id="math-3agent", env_kwargs={"max_action_chars": 2000})
    with pytest.raises(ServerMismatchError, match="was told math-2agent-v3 with kwargs {}"):
        FlexMGSession(server, env_id="math-2agent")
    with pytest.raises(ValueError, match="give both"):
        FlexMGSession(server, env_kwargs={"horizon": 2})
    # TRL's OpenEnv route: the server's env with other kwargs would silently play other rules
    Env = make_environment_factory(
        "math-2agent", role="solver", others={"verifier": lambda m: "ok"}, base_url=server
    )
    with pytest.raises(ServerMismatchError):
        Env().reset(seed=0)


@pytest.mark.slow  # two real server processes
def test_serve_with_workers_plays_concurrent_sessions():
    from flexmg.integrations.openenv_client import FlexMGSession

    with flexmg_server("math-1agent", "--workers", "2", "--log-level", "warning") as url:
        sessions = [FlexMGSession(url, env_id="math-1agent") for _ in range(4)]
        try:
            firsts = [s.reset(seed=i) for i, s in enumerate(sessions)]
            assert all(f.observation["role"] == "solver" for f in firsts)
            for i, s in enumerate(sessions):
                result = s.step({"message": f"\\boxed{{{answer_of_env('math-1agent', i)}}}"})
                assert result.done and result.observation["score"] == 1.0
        finally:
            for s in sessions:
                s.close()


def test_serve_refuses_bad_workers(capsys):
    from flexmg.cli import main

    assert main(["serve", "math-1agent", "--workers", "0", "--port", "1"]) == 2
    assert "--workers must be >= 1" in capsys.readouterr().err


def test_docstring_examples():
    import doctest

    import flexmg.integrations.openenv as module
    import flexmg.integrations.openenv_client as client_module

    for mod in (module, client_module):
        result = doctest.testmod(mod)
        assert result.attempted > 0 and result.failed == 0


def test_environment_in_process_multi_round_rewards_add_up():
    from flexmg.integrations.openenv import FlexMGAction, FlexMGEnvironment

    env = FlexMGEnvironment("math-1agent", {"horizon": 2})
    try:
        assert "call reset first" in env.step(FlexMGAction(message="x")).error
        obs = env.reset(seed=4)
        answer = answer_of_env("math-1agent", 4, horizon=2)
        first = env.step(FlexMGAction(message="-4444"))  # wrong and not boxed: nothing
        assert first.role == "solver" and first.round == 1 and first.reward == 0.0
        assert first.feedback and "Round 1:" in first.messages[-1]["content"]
        last = env.step(FlexMGAction(message=f"\\boxed{{{answer}}}"))
        assert last.done and last.reward == 1.0 == last.score
        assert last.episode_rewards == {"solver": 1.0} and obs.episode_rewards == {"solver": 0.0}
        assert env.state.step_count == 2 and env.state.done
    finally:
        env.close()


def test_serve_rejects_an_unknown_env_before_listening(capsys):
    from flexmg.cli import main

    assert main(["serve", "no-such-env", "--port", "1"]) == 2
    assert "no-such-env" in capsys.readouterr().err


def answer_of_env(env_id: str, seed: int, **kwargs) -> str:
    env = flexmg.make(env_id, **kwargs)
    env.reset(seed=seed)
    answer = env.task.answer
    env.close()
    return answer
