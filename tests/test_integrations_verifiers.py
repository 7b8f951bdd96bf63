"""verifiers v1 adapter, exercised with verifiers' real package: episodes run through its
``Env`` machinery (agents, interactions, the ``null`` chat harness in a subprocess,
the interception server) against an OpenAI-compatible server on 127.0.0.1 that this
test starts, serving a deterministic scripted policy in the real OpenAI wire format."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from helpers import require_extra

# CI tests verifiers in its own venv (scripts/setup_verifiers.sh), so it has its own flag
vf = require_extra("verifiers.v1", "verifiers", flag="FLEXMG_REQUIRE_VERIFIERS")

from openai.types.chat import ChatCompletion, ChatCompletionChunk  # noqa: E402

import flexmg  # noqa: E402
from flexmg.env import Judgement  # noqa: E402
from flexmg.graph import DependencyGraph  # noqa: E402
from flexmg.integrations.seats import play_episode  # noqa: E402
from flexmg.integrations.verifiers import make_env, make_env_config, run_episodes  # noqa: E402
from flexmg.tasks import ListTaskSource, Task  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
Policy = Callable[[list[dict[str, str]]], str]
pytestmark = pytest.mark.slow  # every episode starts one chat-harness process per seat


class ScriptedOpenAIServer:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint on loopback whose replies
    come from ``policy(messages)``; streams SSE when asked. Bounded: it serves at most
    ``max_requests`` requests and shuts itself down after ``lifetime`` seconds."""

    def __init__(self, policy: Policy, max_requests: int = 200, lifetime: float = 600.0) -> None:
        self.policy = policy
        self.requests: list[list[dict[str, str]]] = []
        self.max_requests = max_requests
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802 - http.server's hook name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not self.path.endswith("/chat/completions") or len(outer.requests) >= (
                    outer.max_requests
                ):
                    self.send_error(404 if len(outer.requests) < outer.max_requests else 429)
                    return
                messages = [
                    {"role": m["role"], "content": _text(m.get("content"))}
                    for m in body["messages"]
                ]
                outer.requests.append(messages)
                reply = outer.policy(messages)
                if body.get("stream"):
                    self._stream(body, reply)
                else:
                    self._send(200, "application/json", _completion(body, reply).model_dump_json())

            def _send(self, status: int, kind: str, payload: str) -> None:
                data = payload.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: dict[str, Any], reply: str) -> None:
                events = [c.model_dump_json(exclude_none=True) for c in _chunks(body, reply)]
                self._send(
                    200,
                    "text/event-stream",
                    "".join(f"data: {e}\n\n" for e in events) + "data: [DONE]\n\n",
                )

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.timer = threading.Timer(lifetime, self.httpd.shutdown)

    def __enter__(self) -> ScriptedOpenAIServer:
        self.thread.start()
        self.timer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.timer.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}


def _completion(body: dict[str, Any], reply: str) -> ChatCompletion:
    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-flexmg",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply},
                    "finish_reason": "stop",
                }
            ],
            "usage": _usage(),
        }
    )


def _chunks(body: dict[str, Any], reply: str) -> list[ChatCompletionChunk]:
    base = {
        "id": "chatcmpl-flexmg",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
    }
    deltas = [{"role": "assistant", "content": ""}, {"content": reply}]
    chunks = [
        {**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
    ]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": _usage()})
    return [ChatCompletionChunk.model_validate(c) for c in chunks]


@pytest.fixture(autouse=True)
def local_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chat harness runs via uv: uv from this venv, its cache inside the project."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("UV_CACHE_DIR", str(ROOT / ".cache" / "uv"))
    monkeypatch.setenv("UV_PYTHON_DOWNLOADS", "never")
    monkeypatch.setenv("HF_HOME", str(ROOT / ".cache" / "hf"))


def _ctx(server: ScriptedOpenAIServer) -> Any:
    client = vf.EvalClientConfig(base_url=server.base_url, api_key_var="FLEXMG_TEST_API_KEY")
    return vf.ModelContext(model="scripted", client=client)


def _answers(env_id: str, seeds: list[int]) -> dict[str, str]:
    env = flexmg.make(env_id)
    answers = {}
    for seed in seeds:
        env.reset(seed=seed)
        answers[env.task.prompt] = env.task.answer
    return answers


def _math_policy(answers: dict[str, str], correct: bool) -> Policy:
    """The solver explains (or, for a wrong team, says something hostile: long unicode,
    NULs, an unclosed box); the verifier boxes the gold answer (or a wrong one)."""

    def policy(messages: list[dict[str, str]]) -> str:
        user = messages[-1]["content"]
        if "Write your message as the solver" in user:
            return (
                "Working it out step by step." if correct else "\U0001f600\x00" * 6000 + "\\boxed{"
            )
        gold = next(a for prompt, a in answers.items() if prompt in user)
        return f"\\boxed{{{gold if correct else '-987654'}}}"

    return policy


def test_seats_play_in_graph_order_and_carry_team_and_role_rewards():
    seeds = [0, 1]
    answers = _answers("math-2agent", seeds)
    with ScriptedOpenAIServer(_math_policy(answers, correct=True)) as server:
        env = make_env("math-2agent", seeds=seeds, trainable=["verifier"])
        episodes = asyncio.run(run_episodes(env, _ctx(server)))
    assert [e.ok for e in episodes] == [True, True], [e.errors for e in episodes]
    for episode, seed in zip(episodes, seeds):
        by_role = {t.agent.name: t for t in episode.traces}
        assert sorted(by_role) == ["solver", "verifier"]
        assert by_role["solver"].agent.trainable is False
        assert by_role["verifier"].agent.trainable is True
        for trace in by_role.values():
            assert trace.rewards["team_score"].score == 1.0
            assert trace.reward == 1.0  # reward="team": the team score counts
            assert trace.metrics["success"] == 1.0
            assert trace.info["flexmg"]["order"] == ["solver", "verifier"]
            assert trace.info["flexmg"]["seed"] == seed
    # What the model saw is exactly the seat driver's prompt of each role, in graph order
    # (the episodes run concurrently: pick each one's requests by its task).
    script = _math_policy(answers, correct=True)
    assert len(server.requests) == 4
    for seed in seeds:
        replay = play_episode("math-2agent", {"solver": script, "verifier": script}, seed=seed)
        task = replay.segments[0].messages[-1]["content"].split("\n\n")[0]
        seen = [m[-2:] for m in server.requests if m[-1]["content"].startswith(task + "\n")]
        assert seen == [s.messages for s in replay.segments]


def test_role_rewards_and_a_wrong_team():
    answers = _answers("math-2agent", [3])
    with ScriptedOpenAIServer(_math_policy(answers, correct=False)) as server:
        env = make_env("math-2agent", seeds=[3], reward="role")
        (episode,) = asyncio.run(run_episodes(env, _ctx(server)))
    assert episode.ok, episode.errors
    for trace in episode.traces:
        assert trace.agent.trainable is True  # trainable=None: every seat
        assert trace.rewards["team_score"].score < 1.0  # a boxed wrong value: format credit
        assert trace.rewards["role_reward"].weight == 1.0
        assert trace.reward == trace.rewards["role_reward"].score < 1.0


def _flip_graph(round_index: int, transcript: Any) -> DependencyGraph:
    """Round 1: a then b; round 2: b then a (a per-round graph)."""
    edges = [("a", "b")] if round_index == 0 else [("b", "a")]
    return DependencyGraph(["a", "b"], edges)


def _flip_reward(task: Task, transcript: Any) -> Judgement:
    last = transcript[-1]
    return Judgement(score=1.0 if "done" in last.action else 0.0, done=False)


flexmg.register(
    "vf-flip-v0",
    flexmg.Workflow(
        name="vf-flip",
        roles={"a": "You are a.", "b": "You are b."},
        graph=_flip_graph,
        tasks=ListTaskSource([Task(id="t0", prompt="Take turns.")]),
        reward=_flip_reward,
        horizon=2,
    ),
    description="test: two rounds whose graphs run in opposite orders",
)


def test_per_round_graphs_set_the_seat_order():
    def policy(messages: list[dict[str, str]]) -> str:
        return f"{messages[0]['content']} round {sum(m['role'] == 'user' for m in messages)} done"

    with ScriptedOpenAIServer(policy) as server:
        env = make_env("vf-flip-v0", seeds=[0])
        (episode,) = asyncio.run(run_episodes(env, _ctx(server)))
    assert episode.ok, episode.errors
    order = [m[0]["content"] for m in server.requests]
    assert order == ["You are a.", "You are b.", "You are b.", "You are a."]
    by_role = {t.agent.name: t for t in episode.traces}
    assert by_role["a"].info["flexmg"]["order"] == ["a", "b", "b", "a"]
    assert by_role["a"].num_turns == by_role["b"].num_turns == 2
    assert by_role["a"].rewards["team_score"].score == 1.0


def test_bad_configs_say_what_was_expected():
    with pytest.raises(ValueError, match="unknown roles"):
        make_env_config("math-2agent", trainable=["nobody"])
    with pytest.raises(ValueError, match="unknown roles"):
        make_env_config("math-2agent", seats={"nobody": {}})
    config = make_env_config("math-3agent", seeds=[1, 2])
    assert list(config.agent_harnesses()) == ["planner", "solver", "verifier"]
    assert [t.data.seed for t in make_env("math-3agent", seeds=[1, 2]).taskset] == [1, 2]


def test_module_doctests_and_the_plugin_module() -> None:
    import doctest

    import flexmg_verifiers

    import flexmg.integrations.verifiers as adapter

    result = doctest.testmod(adapter, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
    # verifiers finds the taskset and env by importing the plugin id's module.
    from verifiers.v1.utils.loaders import environment_class, taskset_class

    assert taskset_class(adapter.PLUGIN_ID) is flexmg_verifiers.FlexMGTaskset
    assert environment_class(adapter.PLUGIN_ID) is flexmg_verifiers.FlexMGSeatsEnv


def test_episodes_run_concurrently_in_task_order():
    seeds = [0, 1, 2, 3]
    answers = _answers("math-2agent", seeds)
    script = _math_policy(answers, correct=True)
    lock = threading.Lock()
    load = {"now": 0, "most": 0}

    def slow_policy(messages: list[dict[str, str]]) -> str:
        with lock:
            load["now"] += 1
            load["most"] = max(load["most"], load["now"])
        time.sleep(0.5)  # long enough for the other episodes' requests to arrive
        with lock:
            load["now"] -= 1
        return script(messages)

    with ScriptedOpenAIServer(slow_policy) as server:
        env = make_env("math-2agent", seeds=seeds)
        episodes = asyncio.run(run_episodes(env, _ctx(server), max_concurrent=4))
    assert load["most"] >= 2  # the episodes' model calls overlapped
    assert [t.info["flexmg"]["seed"] for e in episodes for t in e.traces[:1]] == seeds
    assert all(e.ok for e in episodes)


def test_provider_errors_surface():
    import socket

    from flexmg.integrations.verifiers import EpisodeErrors

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = vf.EvalClientConfig(
        base_url=f"http://127.0.0.1:{port}/v1", api_key_var="FLEXMG_TEST_API_KEY"
    )
    ctx = vf.ModelContext(model="nobody", client=client)
    env = make_env("math-1agent", seeds=[0])
    with pytest.raises(EpisodeErrors, match=r"1 of 1 episodes failed[\s\S]*seed 0") as err:
        asyncio.run(run_episodes(env, ctx))
    assert len(err.value.episodes) == 1 and not err.value.episodes[0].ok
    (kept,) = asyncio.run(run_episodes(env, ctx, errors="keep"))
    assert not kept.ok
    with pytest.raises(ValueError, match="errors must be"):
        asyncio.run(run_episodes(env, ctx, errors="ignore"))  # type: ignore[arg-type]
