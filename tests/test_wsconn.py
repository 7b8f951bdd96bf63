"""BlockingWebSocket against a real websockets server (the library's own, on 127.0.0.1)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from helpers import require_extra

require_extra("websockets", "openenv")

from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402
from websockets.sync.server import ServerConnection, serve  # noqa: E402

from flexmg.integrations.wsconn import BlockingWebSocket  # noqa: E402


@contextlib.contextmanager
def ws_server(handler: Callable[[ServerConnection], None], **kwargs: Any) -> Iterator[str]:
    """A websockets server running ``handler`` per connection; its ws:// URL."""
    with serve(handler, "127.0.0.1", 0, **kwargs) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"ws://127.0.0.1:{server.socket.getsockname()[1]}/ws"
        finally:
            server.shutdown()
            thread.join(timeout=10)


def echo(ws: ServerConnection) -> None:
    for message in ws:
        ws.send(message)


def test_requests_get_their_answers_in_order():
    with ws_server(echo) as url:
        ws = BlockingWebSocket(url, timeout_s=10)
        try:
            assert [ws.request(f"m{i} é") for i in range(50)] == [f"m{i} é" for i in range(50)]
            big = "x" * 300_000  # many reads for one message
            assert ws.request(big) == big
        finally:
            ws.close()


def test_fragments_pings_and_binary_messages():
    pongs: list[float] = []

    def handler(ws: ServerConnection) -> None:
        for message in ws:
            pongs.append(ws.ping().wait(10))  # answered while the client reads the reply
            ws.send(["frag", "mented ", message])  # one message in three frames
            ws.send(b"binary")

    with ws_server(handler) as url:
        ws = BlockingWebSocket(url, timeout_s=10)
        try:
            assert ws.request("hi") == "fragmented hi"
            assert ws.recv() == "binary"
            assert ws.request("again") == "fragmented again"
        finally:
            ws.close()
    assert len(pongs) == 2 and all(pongs)


def test_whole_frames_and_pings_stay_on_the_direct_path():
    # What flexmg serve sends (one frame per message, keepalive pings) is read without the
    # library's parser; every payload length encoding (7-bit, 16-bit, 64-bit) comes through.
    pongs: list[float] = []

    def handler(ws: ServerConnection) -> None:
        for message in ws:
            pongs.append(ws.ping(b"k").wait(10))
            ws.send(message)
            ws.send(message.encode() if isinstance(message, str) else message)

    with ws_server(handler, compression=None) as url:
        ws = BlockingWebSocket(url, timeout_s=10)
        try:
            for text in ("short é", "m" * 200, "n" * 70_000, ""):
                assert ws.request(text) == text
                assert ws.recv() == text  # the binary copy, decoded
            assert ws._direct  # no hand-over to the protocol happened
        finally:
            ws.close()
    assert len(pongs) == 4 and all(pongs)


def test_a_server_that_closes_raises_connection_closed():
    def handler(ws: ServerConnection) -> None:
        ws.recv()
        ws.close(code=1011, reason="gone")

    with ws_server(handler) as url:
        ws = BlockingWebSocket(url, timeout_s=10)
        with pytest.raises(ConnectionClosed, match="1011"):
            ws.request("hello")
        ws.close()  # closing again is harmless


def test_a_refused_handshake_raises_with_the_status():
    def refuse(connection: ServerConnection, request: Any) -> Any:
        return connection.respond(404, "no such path\n")

    with ws_server(echo, process_request=refuse) as url:
        with pytest.raises(InvalidStatus, match="404"):
            BlockingWebSocket(url, timeout_s=10)


def test_a_silent_server_times_out():
    release = threading.Event()

    def silent(ws: ServerConnection) -> None:
        ws.recv()
        release.wait(10)

    with ws_server(silent) as url:
        ws = BlockingWebSocket(url, timeout_s=0.5)
        try:
            with pytest.raises(TimeoutError, match="within 0.5s; the WebSocket is closed"):
                ws.request("anyone?")
            with pytest.raises(ConnectionError, match="timed out earlier"):
                ws.request("a late answer must not be taken for this one's")
        finally:
            release.set()
            ws.close()
