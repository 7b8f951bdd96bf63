"""A lean ``/ws`` endpoint for ``flexmg serve``: OpenEnv's WebSocket protocol, less work per message.

OpenEnv's own ``/ws`` endpoint (``HTTPEnvServer.register_routes``) handles each message
with pydantic models: the incoming message is validated into ``WSResetMessage`` /
``WSStepMessage``, the action into the env's ``Action`` class, the env's observation is a
model that ``serialize_observation`` dumps to a dict, which is validated again into
``WSObservationResponse`` and dumped to JSON; ``reset`` also inspects the env's signature.
:class:`LeanWebSocketEndpoint` speaks the same protocol, byte for byte, with plain dicts
on the common path:

* a well-formed ``reset`` / ``step`` / ``state`` / ``close`` is recognised by its keys and
  value types (exactly what the models would accept unchanged), the env's
  ``reset_fields`` / ``step_fields`` / ``state_fields``
  (:class:`~flexmg.integrations.openenv.FlexMGEnvironment`) give the answer's fields as a
  dict, and ``pydantic_core.to_json`` (the serializer ``model_dump_json`` uses) writes it;
* anything else (a malformed message, extra keys, an unknown type, ``mcp``, an env without
  those helpers) goes through OpenEnv's own models and functions, so its answers, errors
  included, are OpenEnv's. That holds for OpenEnv's quirks too: JSON that is not an object
  (``[1]``, ``"text"``) or a binary frame ends the session with a ``SESSION_ERROR``, as
  OpenEnv 0.10's endpoint does;
* it talks ASGI directly (no Starlette ``WebSocket`` wrapper per message) and uses
  OpenEnv's ``HTTPEnvServer`` for sessions (capacity, idle reaping, ``/health``), so
  ``max_sessions`` and session bookkeeping hold as before. A connection that attaches to an
  existing session (``/ws?session_id=...``) is handed to OpenEnv's endpoint.

:func:`install_lean_ws` swaps it in for OpenEnv's ``/ws`` route on an app built by
OpenEnv's ``create_app``; if the route is not where it expects it (another OpenEnv
layout), it leaves OpenEnv's endpoint in place, warns, and returns ``False``.
``flexmg serve`` installs it unless told ``--openenv-ws`` (``lean=False``).

Needs ``pip install 'flexmg[openenv]'``.
"""

from __future__ import annotations

import inspect
import json
import warnings
from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import AsyncExitStack
from typing import Any

try:
    import pydantic_core
    from openenv.core.env_server.exceptions import EnvironmentFactoryError, SessionCapacityError
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.serialization import deserialize_action, serialize_observation
    from openenv.core.env_server.types import (
        WSCloseMessage,
        WSErrorCode,
        WSErrorResponse,
        WSObservationResponse,
        WSResetMessage,
        WSStateMessage,
        WSStateResponse,
        WSStepMessage,
    )
    from pydantic import ValidationError
except ImportError as err:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "flexmg.integrations.openenv_ws needs OpenEnv: pip install 'flexmg[openenv]'"
    ) from err

__all__ = ["LeanWebSocketEndpoint", "find_openenv_ws", "install_lean_ws"]

WS_PATH = "/ws"
MESSAGE_KEYS = frozenset({"type", "data"})
STEP_KEYS = frozenset({"message", "role"})  # a FlexMGAction without metadata
RESET_KEYS = frozenset({"seed", "episode_id"})  # reset_fields' own parameters

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class _Disconnect(Exception):
    """The client went away (Starlette's ``WebSocketDisconnect`` for our raw ASGI loop)."""


def _dumps(payload: dict[str, Any]) -> str:
    # model_dump_json of a model whose fields hold these values: same serializer, same
    # options (pydantic's default ser_json_inf_nan is "null"), same bytes.
    return pydantic_core.to_json(payload, inf_nan_mode="null").decode()


def _error(data: dict[str, Any]) -> str:
    return WSErrorResponse(data=data).model_dump_json()


def _observation_answer(fields: dict[str, Any]) -> str:
    """OpenEnv's observation answer, from the observation's fields.

    The same text as ``WSObservationResponse(data=serialize_observation(obs)).model_dump_json()``
    for the observation with these fields (in declaration order, of the declared types).
    """
    observation = dict(fields)
    reward = observation.pop("reward")
    done = observation.pop("done")
    data: dict[str, Any] = {"observation": observation, "reward": reward, "done": done}
    metadata = observation.get("metadata")
    if metadata:
        data["metadata"] = metadata
    return _dumps({"type": "observation", "data": data})


def find_openenv_ws(app: Any) -> tuple[int, Any, Any, Any] | None:
    """OpenEnv's ``/ws`` route on ``app``, or ``None`` if the layout differs.

    Returns (its index in ``app.router.routes``, the route, the ``HTTPEnvServer`` and the
    ``mcp_handler`` its endpoint closes over).
    """
    from openenv.core.env_server.http_server import HTTPEnvServer

    routes = getattr(getattr(app, "router", None), "routes", None)
    if not isinstance(routes, list):
        return None
    for index, route in enumerate(routes):
        if getattr(route, "path", None) != WS_PATH:
            continue
        endpoint = getattr(route, "endpoint", None)
        code, closure = getattr(endpoint, "__code__", None), getattr(endpoint, "__closure__", None)
        if code is None or not closure:
            return None
        cells = dict(zip(code.co_freevars, closure, strict=False))
        try:
            server = cells["self"].cell_contents
            mcp_handler = cells["mcp_handler"].cell_contents
        except (KeyError, ValueError):  # a free variable missing or not yet bound
            return None
        needed = ("_create_session", "_destroy_session", "_update_session_activity")
        if not isinstance(server, HTTPEnvServer) or not all(hasattr(server, n) for n in needed):
            return None
        return index, route, server, mcp_handler
    return None


def install_lean_ws(app: Any) -> bool:
    """Replace OpenEnv's ``/ws`` endpoint on ``app`` with :class:`LeanWebSocketEndpoint`.

    Returns ``True`` if it did; ``False`` (with a warning, OpenEnv's endpoint kept) when
    the app's ``/ws`` route is not laid out as this OpenEnv version's ``create_app`` makes it.
    ``app.state.flexmg_ws`` says which endpoint serves ``/ws``: ``"lean"`` or ``"openenv"``.
    """
    from starlette.routing import WebSocketRoute

    found = find_openenv_ws(app)
    if found is None:
        warnings.warn(
            "flexmg serve: OpenEnv's /ws route was not found where expected (another OpenEnv "
            "version?); serving /ws with OpenEnv's own endpoint",
            RuntimeWarning,
            stacklevel=2,
        )
        app.state.flexmg_ws = "openenv"
        return False
    index, route, server, mcp_handler = found
    endpoint = LeanWebSocketEndpoint(server, mcp_handler, route.endpoint)
    app.router.routes[index] = WebSocketRoute(WS_PATH, endpoint, name=getattr(route, "name", None))
    app.state.flexmg_ws = "lean"
    return True


class LeanWebSocketEndpoint:
    """An ASGI app answering OpenEnv's ``/ws`` protocol like OpenEnv's endpoint, byte for byte.

    Args:
        server: the app's OpenEnv ``HTTPEnvServer`` (sessions, action class).
        mcp_handler: OpenEnv's handler for ``mcp`` messages (from the same ``create_app``).
        openenv_endpoint: OpenEnv's own endpoint function, for ``?session_id=`` connections.
    """

    def __init__(self, server: Any, mcp_handler: Any, openenv_endpoint: Any) -> None:
        self.server = server
        self.mcp_handler = mcp_handler
        self.openenv_endpoint = openenv_endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one WebSocket connection (one session, one env)."""
        if b"session_id" in scope.get("query_string", b""):  # attaching: OpenEnv's own
            from starlette.websockets import WebSocket

            await self.openenv_endpoint(WebSocket(scope, receive, send))
            return
        # Starlette's accept(): the connect message, then the accept.
        message = await receive()
        if message["type"] != "websocket.connect":  # the client left before the handshake
            return
        await send({"type": "websocket.accept", "subprotocol": None, "headers": []})

        async def send_text(text: str) -> None:
            try:
                await send({"type": "websocket.send", "text": text})
            except OSError as err:  # uvicorn's ClientDisconnected: Starlette's 1006 disconnect
                raise _Disconnect from err

        server = self.server
        session_id: str | None = None
        try:
            session_id, env = await server._create_session()
            if env is None:
                raise RuntimeError("Session environment not initialized for websocket")
            async with AsyncExitStack() as stack:
                mcp_session_factory = getattr(env, "mcp_session", None)
                if callable(mcp_session_factory):
                    await stack.enter_async_context(mcp_session_factory())
                await self._serve(env, session_id, receive, send_text)
        except _Disconnect:
            pass
        except SessionCapacityError as e:
            await _quietly(send_text, _error({
                "message": str(e),
                "code": WSErrorCode.CAPACITY_REACHED,
                "active_sessions": e.active_sessions,
                "max_sessions": e.max_sessions,
            }))  # fmt: skip
        except EnvironmentFactoryError as e:
            await _quietly(send_text, _error({
                "message": str(e), "code": WSErrorCode.FACTORY_ERROR,
                "factory_name": e.factory_name,
            }))  # fmt: skip
        except Exception as e:  # noqa: BLE001 - OpenEnv answers SESSION_ERROR and closes
            await _quietly(
                send_text, _error({"message": str(e), "code": WSErrorCode.SESSION_ERROR})
            )
        finally:
            if session_id:
                await server._destroy_session(session_id)
            try:
                await send({"type": "websocket.close", "code": 1000, "reason": ""})
            except Exception:  # noqa: BLE001, S110 - already closed: nothing to do
                pass

    async def _serve(
        self,
        env: Any,
        session_id: str,
        receive: Receive,
        send_text: Callable[[str], Awaitable[None]],
    ) -> None:
        """The message loop: OpenEnv's, with plain-dict fast paths."""
        server = self.server
        touch = server._update_session_activity
        lean = all(hasattr(env, n) for n in ("reset_fields", "step_fields", "state_fields"))
        lean_reset = lean and _overrides(env, "reset_async")  # awaited on the loop, like OpenEnv
        lean_step = lean and _overrides(env, "step_async")
        loads = json.loads
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            raw = message["text"]  # a binary frame: KeyError, OpenEnv's SESSION_ERROR too
            try:
                msg = loads(raw)
            except json.JSONDecodeError as e:
                await send_text(_error({"message": f"Invalid JSON: {e}",
                                        "code": WSErrorCode.INVALID_JSON}))  # fmt: skip
                continue
            msg_type = msg.get("type", "")  # not an object: AttributeError, as in OpenEnv
            try:
                # the common, well-formed messages: what OpenEnv's models accept unchanged
                if msg_type == "step" and lean_step and len(msg) == 2:
                    data = msg.get("data")
                    if (
                        type(data) is dict
                        and data.keys() <= STEP_KEYS
                        and type(data.get("message")) is str
                        and (data.get("role") is None or type(data["role"]) is str)
                    ):
                        answer = _observation_answer(
                            env.step_fields(data["message"], data.get("role"))
                        )
                        touch(session_id, increment_step=True)
                        await send_text(answer)
                        continue
                elif msg_type == "reset" and lean_reset and msg.keys() <= MESSAGE_KEYS:
                    data = msg.get("data", {})
                    if type(data) is dict and data.keys() <= RESET_KEYS:
                        answer = _observation_answer(env.reset_fields(**data))
                        touch(session_id)
                        await send_text(answer)
                        continue
                elif msg_type == "state" and lean and len(msg) == 1:
                    await send_text(_dumps({"type": "state", "data": env.state_fields()}))
                    continue
                elif msg_type == "close" and len(msg) == 1:
                    return
                # everything else: OpenEnv's own handling
                reply = await self._openenv_message(env, session_id, msg, msg_type)
                if reply is None:
                    return
                await send_text(reply)
            except _Disconnect:
                raise
            except ValidationError as e:
                await send_text(_error({
                    "message": "Invalid message",
                    "code": WSErrorCode.VALIDATION_ERROR,
                    "errors": e.errors(),
                }))  # fmt: skip
            except Exception as e:  # noqa: BLE001 - OpenEnv's EXECUTION_ERROR
                await send_text(_error({"message": str(e), "code": WSErrorCode.EXECUTION_ERROR}))

    async def _openenv_message(
        self, env: Any, session_id: str, message: dict[str, Any], msg_type: Any
    ) -> str | None:
        """One message as OpenEnv's endpoint handles it; ``None`` for ``close``."""
        server = self.server
        match msg_type:
            case "reset":
                msg = WSResetMessage(**message)
                if _overrides(env, "reset_async"):
                    kwargs = server._get_valid_kwargs(inspect.signature(env.reset_async), msg.data)
                    observation = await env.reset_async(**kwargs)
                else:
                    kwargs = server._get_valid_kwargs(inspect.signature(env.reset), msg.data)
                    observation = await server._run_in_session_executor(
                        session_id, env.reset, **kwargs
                    )
                server._update_session_activity(session_id)
                return WSObservationResponse(
                    data=serialize_observation(observation)
                ).model_dump_json()
            case "step":
                step_msg = WSStepMessage(**message)
                action = deserialize_action(step_msg.data, server.action_cls)
                if _overrides(env, "step_async"):
                    observation = await env.step_async(action)
                else:
                    observation = await server._run_in_session_executor(
                        session_id, env.step, action
                    )
                server._update_session_activity(session_id, increment_step=True)
                return WSObservationResponse(
                    data=serialize_observation(observation)
                ).model_dump_json()
            case "state":
                WSStateMessage(**message)
                state = env.state
                state_data = state.model_dump() if hasattr(state, "model_dump") else (
                    dict(state) if state else {}
                )  # fmt: skip
                return WSStateResponse(data=state_data).model_dump_json()
            case "close":
                WSCloseMessage(**message)
                return None
            case "mcp":
                from openenv.core.env_server.mcp_types import (
                    JsonRpcErrorCode,
                    JsonRpcRequest,
                    JsonRpcResponse,
                    WSMCPMessage,
                    WSMCPResponse,
                )

                mcp_msg = WSMCPMessage(**message)
                try:
                    rpc_request = JsonRpcRequest(**mcp_msg.data)
                except Exception as e:  # noqa: BLE001 - as OpenEnv: any failure is invalid
                    rpc_response = JsonRpcResponse.error_response(
                        JsonRpcErrorCode.INVALID_REQUEST, f"Invalid request: {e}"
                    )
                else:
                    rpc_response = await self.mcp_handler(
                        rpc_request, session_env=env, session_id=session_id
                    )
                return WSMCPResponse(data=rpc_response.model_dump()).model_dump_json()
            case _:
                return WSErrorResponse(
                    data={
                        "message": f"Unknown message type: {msg_type}",
                        "code": WSErrorCode.UNKNOWN_TYPE,
                    }
                ).model_dump_json()


def _overrides(env: Any, name: str) -> bool:
    """Whether ``env`` overrides ``Environment.<name>`` (OpenEnv's ``overrides_method``)."""
    from openenv.core.env_server.http_server import overrides_method

    return bool(overrides_method(getattr(env, name), getattr(Environment, name)))


async def _quietly(send_text: Callable[[str], Awaitable[None]], text: str) -> None:
    try:
        await send_text(text)
    except Exception:  # noqa: BLE001, S110 - the client is gone: nothing to tell it
        pass
