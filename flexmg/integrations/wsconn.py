"""A blocking WebSocket connection with no background thread (for :class:`FlexMGSession`).

websockets' own sync client reads the socket on a background thread and hands each message
over through a queue, so every request/answer pays a thread switch on top of the network
round trip. :class:`BlockingWebSocket` drives websockets' sans-I/O ``ClientProtocol`` (the
library's framing, handshake and validation) from the calling thread on one plain socket:
``request`` sends a text message and reads until the answer is whole, nothing in between.
Pings are answered as they arrive during a read. It connects directly (no HTTP proxy).

Example (with ``flexmg serve math-2agent --port 8000`` running)::

    from flexmg.integrations.wsconn import BlockingWebSocket
    ws = BlockingWebSocket("ws://127.0.0.1:8000/ws", timeout_s=30.0)
    answer = ws.request('{"type": "reset", "data": {"seed": 0}}')
    ws.close()
"""

from __future__ import annotations

import socket
import ssl
from collections import deque
from typing import Any

try:
    from websockets.client import ClientProtocol
    from websockets.exceptions import ConnectionClosed
    from websockets.frames import Frame, Opcode
    from websockets.protocol import State
    from websockets.uri import parse_uri
except ImportError as err:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "flexmg.integrations.wsconn needs websockets: pip install 'flexmg[openenv]'"
    ) from err

__all__ = ["BlockingWebSocket"]

READ_SIZE = 1 << 16
DATA = (Opcode.TEXT, Opcode.BINARY, Opcode.CONT)


class BlockingWebSocket:
    """One client WebSocket on a blocking socket, driven by the calling thread.

    Args:
        url: ``ws://`` or ``wss://`` URL.
        timeout_s: how long the handshake and each read may wait: then ``TimeoutError``,
            and the connection is closed (a late answer would be taken for the next).
    """

    def __init__(self, url: str, timeout_s: float) -> None:
        uri = parse_uri(url)
        self._timeout_s, self._timed_out = timeout_s, False
        self._protocol = ClientProtocol(uri, max_size=None)
        sock = socket.create_connection((uri.host, uri.port), timeout=timeout_s)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if uri.secure:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=uri.host)
            self._sock = sock
            self._events: deque[Any] = deque()
            self._protocol.send_request(self._protocol.connect())
            self._flush()
            while self._protocol.state is State.CONNECTING and not self._protocol.handshake_exc:
                self._read()
            if self._protocol.handshake_exc is not None:
                raise self._protocol.handshake_exc
        except BaseException:
            sock.close()
            raise

    def _flush(self) -> None:
        for data in self._protocol.data_to_send():
            if data:
                self._sock.sendall(data)

    def _read(self) -> None:
        if self._timed_out:
            raise ConnectionError("the WebSocket timed out earlier and is closed; open a new one")
        try:
            data = self._sock.recv(READ_SIZE)
        except TimeoutError:
            # A late answer would be taken for the next request's: this connection is done.
            self._timed_out = True
            self._sock.close()
            raise TimeoutError(
                f"no answer within {self._timeout_s}s; the WebSocket is closed"
            ) from None
        if data:
            self._protocol.receive_data(data)
        else:
            self._protocol.receive_eof()
        self._flush()  # pongs, close answers
        self._events.extend(self._protocol.events_received())
        if not data:
            if self._protocol.handshake_exc is not None:
                raise self._protocol.handshake_exc
            raise self._protocol.close_exc

    def send(self, text: str) -> None:
        """Send one text message."""
        if self._timed_out:
            raise ConnectionError("the WebSocket timed out earlier and is closed; open a new one")
        self._protocol.send_text(text.encode())
        self._flush()

    def recv(self) -> str:
        """The next whole text or binary message (binary decoded as UTF-8)."""
        parts: list[bytes] = []
        events = self._events
        while True:
            while events:
                event = events.popleft()
                if isinstance(event, Frame) and event.opcode in DATA:
                    parts.append(bytes(event.data))
                    if event.fin:
                        return b"".join(parts).decode()
            if self._protocol.state is State.CLOSED:
                raise self._protocol.close_exc
            self._read()

    def request(self, text: str) -> str:
        """Send ``text``; the next message."""
        self.send(text)
        return self.recv()

    def close(self) -> None:
        """Close the WebSocket (a close frame, then the socket)."""
        try:
            if self._protocol.state is State.OPEN and not self._timed_out:
                self._protocol.send_close()
                self._flush()
        except (OSError, ConnectionClosed):  # a dead socket is closed already
            pass
        finally:
            self._sock.close()
