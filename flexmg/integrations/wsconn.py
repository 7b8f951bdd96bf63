"""A blocking WebSocket connection with no background thread (for :class:`FlexMGSession`).

websockets' own sync client reads the socket on a background thread and hands each message
over through a queue, so every request/answer pays a thread switch on top of the network
round trip. :class:`BlockingWebSocket` drives websockets' sans-I/O ``ClientProtocol`` (the
library's framing, handshake and validation) from the calling thread on one plain socket:
``request`` sends a text message and reads until the answer is whole, nothing in between.
Pings are answered as they arrive during a read. It connects directly (no HTTP proxy).

After the handshake, whole unfragmented data frames (all a ``flexmg serve`` server sends) and
pings are read and written here directly, a few header bytes with no parser in between;
anything else (a fragmented message, a close frame, a frame that breaks the rules) hands the
bytes, and every later read, to the library's protocol, which then answers for the connection.

Example (with ``flexmg serve math-2agent --port 8000`` running)::

    from flexmg.integrations.wsconn import BlockingWebSocket
    ws = BlockingWebSocket("ws://127.0.0.1:8000/ws", timeout_s=30.0)
    answer = ws.request('{"type": "reset", "data": {"seed": 0}}')
    ws.close()
"""

from __future__ import annotations

import secrets
import socket
import ssl
import struct
from collections import deque
from typing import Any

try:
    from websockets.client import ClientProtocol
    from websockets.exceptions import ConnectionClosed
    from websockets.frames import Frame, Opcode
    from websockets.protocol import State
    from websockets.uri import parse_uri

    try:
        from websockets.speedups import apply_mask
    except ImportError:  # pragma: no cover - websockets without its C extension
        from websockets.utils import apply_mask
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
        # The direct path starts at a frame boundary: nothing received past the handshake.
        self._events = deque(e for e in self._events if isinstance(e, Frame))  # the response
        reader = getattr(self._protocol, "reader", None)
        self._direct = (
            self._protocol.state is State.OPEN
            and not self._events
            and isinstance(getattr(reader, "buffer", None), bytearray)
            and not reader.buffer  # type: ignore[union-attr]
        )
        self._buffer = bytearray()

    def _flush(self) -> None:
        for data in self._protocol.data_to_send():
            if data:
                self._sock.sendall(data)

    def _read(self) -> None:
        data = self._recv_bytes()
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
        if self._direct:
            self._send_frame(0x81, text.encode())  # FIN + text
            return
        self._protocol.send_text(text.encode())
        self._flush()

    def _send_frame(self, first: int, payload: bytes) -> None:
        """One masked client frame (RFC 6455 5.2), as websockets' ``Frame.serialize`` writes it."""
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", first, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", first, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", first, 0x80 | 127, n)
        mask = secrets.token_bytes(4)
        self._sock.sendall(head + mask + apply_mask(payload, mask))

    def _recv_direct(self) -> str | None:
        """The next data message read directly; ``None`` once the protocol has taken over."""
        buffer = self._buffer
        while self._direct:
            if len(buffer) >= 2:
                first, second = buffer[0], buffer[1]
                opcode, size, start = first & 0x0F, second & 0x7F, 2
                if size == 126:
                    size, start = (struct.unpack_from("!H", buffer, 2)[0] if len(buffer) >= 4
                                   else -1), 4  # fmt: skip
                elif size == 127:
                    size, start = (struct.unpack_from("!Q", buffer, 2)[0] if len(buffer) >= 10
                                   else -1), 10  # fmt: skip
                plain = first & 0xF0 == 0x80 and not second & 0x80  # FIN, no RSV, unmasked
                if plain and opcode in (0x1, 0x2, 0x9, 0xA) and size >= 0:
                    if len(buffer) >= start + size:
                        payload = bytes(buffer[start : start + size])
                        del buffer[: start + size]
                        if opcode == 0x9:  # ping: pong with its payload
                            self._send_frame(0x8A, payload)
                        elif opcode != 0xA:  # pongs are not awaited here
                            return payload.decode()
                        continue
                elif size >= 0 or not plain:
                    # a fragment, a close, or something the protocol must judge: hand over
                    self._direct = False
                    data, buffer[:] = bytes(buffer), b""
                    self._protocol.receive_data(data)
                    self._flush()
                    self._events.extend(self._protocol.events_received())
                    return None
            data = self._recv_bytes()
            if not data:  # EOF: the protocol says how the connection ended
                self._direct = False
                self._protocol.receive_data(bytes(buffer))
                buffer.clear()
                self._protocol.receive_eof()
                self._events.extend(self._protocol.events_received())
                raise self._protocol.close_exc
            buffer += data
        return None

    def _recv_bytes(self) -> bytes:
        if self._timed_out:
            raise ConnectionError("the WebSocket timed out earlier and is closed; open a new one")
        try:
            return self._sock.recv(READ_SIZE)
        except TimeoutError:
            # A late answer would be taken for the next request's: this connection is done.
            self._timed_out = True
            self._sock.close()
            raise TimeoutError(
                f"no answer within {self._timeout_s}s; the WebSocket is closed"
            ) from None

    def recv(self) -> str:
        """The next whole text or binary message (binary decoded as UTF-8)."""
        if self._direct:
            text = self._recv_direct()
            if text is not None:
                return text
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
