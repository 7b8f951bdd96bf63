"""flexmg's lean ``/ws`` endpoint answers byte for byte like OpenEnv's own.

Two real ``flexmg serve`` processes on 127.0.0.1, one with the lean endpoint (the default),
one with OpenEnv's (``--openenv-ws``), get the same scripted messages over raw WebSockets:
episodes, state, every kind of malformed input; each answer must be the same text.
"""

import contextlib
import json

import pytest

import flexmg
from helpers import flexmg_server, require_extra

require_extra("openenv.core", "openenv")
connect = require_extra("websockets.sync.client", "openenv").connect

ENV_ARGS = ("math-2agent", "--max-sessions", "4", "max_action_chars=2000")


@pytest.fixture(scope="module")
def servers():
    with flexmg_server(*ENV_ARGS) as lean, flexmg_server(*ENV_ARGS, "--openenv-ws") as openenv:
        yield lean, openenv


def ws_url(base: str) -> str:
    return base.replace("http://", "ws://") + "/ws"


def answers(base: str, messages: list[str], closes: bool = False) -> list[str]:
    """Send each message on one connection; each answer's text (and whether it closed)."""
    from websockets.exceptions import ConnectionClosed

    out = []
    with connect(ws_url(base), compression=None, open_timeout=60) as ws:
        for text in messages:
            ws.send(text)
            out.append(ws.recv(timeout=60))
        if closes:  # the server ends the session after the last message
            try:
                extra = ws.recv(timeout=60)
            except ConnectionClosed:
                extra = "<closed>"
            out.append(extra)
    return out


def msg(kind: str, data=None, **extra) -> str:
    body = {"type": kind, **extra}
    if data is not None:
        body["data"] = data
    return json.dumps(body)


def answer_of(seed: int) -> str:
    env = flexmg.make("math-2agent")
    env.reset(seed=seed)
    answer = str(env.task.answer)
    env.close()
    return answer


def scripted_session() -> list[str]:
    right = f"\\boxed{{{answer_of(4)}}}"
    return [
        msg("state"),  # before any reset
        msg("step", {"message": "too early"}),  # before any reset: an observation with error
        msg("reset", {"seed": 4, "episode_id": "ep-1"}),
        msg("state"),
        msg("step", {"message": "hi", "role": "verifier"}),  # not its turn
        msg("step", {"msg": "hi"}),  # missing field
        msg("step", {"message": 5}),  # wrong type
        msg("step", {"message": "x", "extra": 1}),  # extra field
        msg("step", {"message": "x", "metadata": {"k": 1}}),  # OpenEnv's metadata field
        msg("step", [1, 2]),  # data not an object
        msg("step"),  # no data
        msg("step", {"message": "x"}, extra=1),  # extra key on the message
        msg("step", {"message": right + ' \u202e\U0001f600 \x00 \n\t"quoted" </script>'}),
        msg("state"),
        msg("step", {"message": f"Agreed: {right}", "role": "verifier"}),  # the episode ends
        msg("step", {"message": "more"}),  # after the end
        msg("state"),
        msg("reset", {"seed": 5, "episode_id": "ep-2", "unused": [1, {"a": None}]}),  # **kwargs
        msg("reset", {"seed": "abc", "episode_id": "ep-3"}),  # a seed flexmg cannot use
        msg("reset", [1]),  # data not an object
        msg("reset", {"seed": 6, "episode_id": "ep-4"}, extra=True),  # extra key
        msg("reset", {"seed": True, "episode_id": "ep-5"}),  # coerced by FlexMGState
        msg("state"),
        msg("reset", {"seed": 7, "episode_id": 12345}),  # an id FlexMGState refuses
        msg("state"),
        msg("reset", {"seed": 8, "episode_id": "ep-6"}),
        msg("step", {"message": "\\boxed{-1}", "role": None}),
        msg("state", extra=1),  # extra key
        msg("close", extra=1),  # extra key: refused, the session goes on
        msg("unknown"),
        json.dumps({"type": 5}),
        json.dumps({"data": {}}),  # no type
        json.dumps({}),
        msg("mcp", {"jsonrpc": "2.0", "method": "tools/list", "id": 1}),
        msg("mcp", {"nonsense": True}),
        "not json",
        "{",
        "",
        msg("state"),
    ]


@pytest.mark.slow  # two real server processes (tens of seconds on a busy machine)
def test_the_lean_endpoint_is_the_default_and_openenvs_is_an_option(servers):
    lean, openenv = servers
    import urllib.request

    from flexmg.integrations.openenv import create_flexmg_app
    from flexmg.integrations.openenv_ws import LeanWebSocketEndpoint

    for base, ws in ((lean, "lean"), (openenv, "openenv")):  # flexmg's identity route
        with urllib.request.urlopen(f"{base}/flexmg", timeout=30) as resp:
            identity = json.loads(resp.read())
        assert identity["env_id"] == "math-2agent" and identity["ws"] == ws
    app = create_flexmg_app("echo")
    assert app.state.flexmg_ws == "lean"
    ws_routes = [r for r in app.router.routes if getattr(r, "path", "") == "/ws"]
    assert len(ws_routes) == 1 and isinstance(ws_routes[0].app, LeanWebSocketEndpoint)
    assert create_flexmg_app("echo", lean=False).state.flexmg_ws == "openenv"


@pytest.mark.slow  # two real server processes (tens of seconds on a busy machine)
def test_a_scripted_session_gets_the_same_bytes_from_both_endpoints(servers):
    lean, openenv = servers
    script = scripted_session()
    ours, theirs = answers(lean, script), answers(openenv, script)
    for sent, a, b in zip(script, ours, theirs, strict=True):
        assert a == b, f"after {sent!r}:\nlean   : {a}\nopenenv: {b}"
    kinds = [json.loads(a)["type"] for a in ours]
    codes = {json.loads(a)["data"].get("code") for a in ours if json.loads(a)["type"] == "error"}
    assert {"observation", "state", "error"} <= set(kinds)
    assert {"VALIDATION_ERROR", "EXECUTION_ERROR", "UNKNOWN_TYPE", "INVALID_JSON"} <= codes
    done = [json.loads(a)["data"] for a in ours if '"done":true' in a]
    assert done and done[0]["observation"]["score"] == 1.0  # a real episode was won


@pytest.mark.slow  # two real server processes (tens of seconds on a busy machine)
@pytest.mark.parametrize("last", ["[1, 2]", '"text"', "5", "null", "true", msg("close")])
def test_messages_that_end_the_session_end_it_alike(servers, last):
    # JSON that is not an object ends OpenEnv's session with a SESSION_ERROR; close ends it.
    lean, openenv = servers
    script = [msg("reset", {"seed": 1, "episode_id": "e"}), last]
    if last == msg("close"):
        outs = []
        for base in servers:
            outs.append(answers(base, script[:1]) + _after_close(base, script))
        assert outs[0] == outs[1]
        return
    ours, theirs = answers(lean, script, closes=True), answers(openenv, script, closes=True)
    assert ours == theirs and ours[-1] == "<closed>"
    assert json.loads(ours[1])["data"]["code"] == "SESSION_ERROR"


def _after_close(base: str, script: list[str]) -> list[str]:
    from websockets.exceptions import ConnectionClosed

    with connect(ws_url(base), compression=None, open_timeout=60) as ws:
        ws.send(script[0])
        ws.recv(timeout=60)
        ws.send(script[1])
        try:
            return [ws.recv(timeout=60)]
        except ConnectionClosed:
            return ["<closed>"]


@pytest.mark.slow  # two real server processes (tens of seconds on a busy machine)
def _next_or_closed(ws) -> str:
    """The next message, or ``"<closed>"`` when the server closed the connection instead."""
    from websockets.exceptions import ConnectionClosed

    try:
        return ws.recv(timeout=60)
    except ConnectionClosed:
        return "<closed>"


def test_a_binary_frame_ends_the_session_alike(servers):
    outs = []
    for base in servers:
        with connect(ws_url(base), compression=None, open_timeout=60) as ws:
            ws.send(b'{"type": "state"}')
            got = [ws.recv(timeout=60), _next_or_closed(ws)]
        outs.append(got)
    assert outs[0] == outs[1] and outs[0][-1] == "<closed>"


@pytest.mark.slow  # two real server processes (tens of seconds on a busy machine)
def test_openenvs_client_plays_on_the_lean_endpoint(servers):
    from openenv.core import GenericEnvClient

    lean, _ = servers
    answer = answer_of(9)
    with GenericEnvClient(base_url=lean).sync() as client:
        first = client.reset(seed=9)
        assert first.observation["role"] == "solver" and not first.done
        client.step({"message": f"\\boxed{{{answer}}}"})
        last = client.step({"message": f"\\boxed{{{answer}}}", "role": "verifier"})
        assert last.done and last.reward == 1.0
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR|validation"):
            client.step({"message": 5})
        assert client.state()["step_count"] == 2


@pytest.mark.slow  # two real server processes (tens of seconds on a busy machine)
def test_a_session_past_max_sessions_is_refused_alike(servers):
    from websockets.exceptions import ConnectionClosed

    outs = []
    for base in servers:  # --max-sessions 4 (a session of an earlier test may still be closing)
        got: list[str] = []
        with contextlib.ExitStack() as held:
            for _ in range(10):
                if got:
                    break
                ws = held.enter_context(connect(ws_url(base), compression=None, open_timeout=60))
                with contextlib.suppress(ConnectionClosed):  # refused: closed already
                    ws.send(msg("state"))
                answer = ws.recv(timeout=60)
                if '"CAPACITY_REACHED"' in answer:
                    got += [answer, _next_or_closed(ws)]
        outs.append(got)
    assert outs[0] == outs[1] and outs[0][-1] == "<closed>"
    assert json.loads(outs[0][0])["data"]["max_sessions"] == 4


def test_an_app_without_openenvs_ws_route_keeps_its_own_with_a_warning():
    from fastapi import FastAPI

    from flexmg.integrations.openenv_ws import find_openenv_ws, install_lean_ws

    app = FastAPI()

    @app.websocket("/ws")
    async def other(websocket):  # not OpenEnv's endpoint: no HTTPEnvServer in its closure
        await websocket.close()

    assert find_openenv_ws(app) is None
    with pytest.warns(RuntimeWarning, match="OpenEnv's own endpoint"):
        assert install_lean_ws(app) is False
    assert app.state.flexmg_ws == "openenv"
    assert [r.endpoint for r in app.router.routes if getattr(r, "path", "") == "/ws"] == [other]


def test_in_process_apps_answer_alike():
    # The same comparison without server processes (Starlette's test client), for quick runs.
    from starlette.testclient import TestClient

    from flexmg.integrations.openenv import create_flexmg_app

    script = [
        msg("reset", {"seed": 2, "episode_id": "q"}),
        msg("step", {"message": "\\boxed{1}"}),
        msg("step", {"message": 1}),
        msg("state"),
        msg("nope"),
        "{bad",
    ]
    outs = []
    for lean in (True, False):
        app = create_flexmg_app("math-2agent", lean=lean)
        assert app.state.flexmg_ws == ("lean" if lean else "openenv")
        with TestClient(app) as client:
            with client.websocket_connect("/ws") as ws:
                got = []
                for text in script:
                    ws.send_text(text)
                    got.append(ws.receive_text())
        outs.append(got)
    assert outs[0] == outs[1]
