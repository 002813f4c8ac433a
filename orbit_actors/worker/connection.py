"""The worker's connection to the gateway: one WebSocket on Orbit's own client transport
(:mod:`orbit_actors.http.client_open`), seen through the narrow :class:`Connection` interface
the worker's logic uses (send a text, receive a text, close with a code).

Why not trio-websocket: its pure-Python stack (wsproto's event objects, a reader task and a
channel per message) took about 40% of a busy worker's CPU, and the worker shares the
machine's cores with the server it feeds.
"""

from __future__ import annotations

import ssl
from contextlib import AbstractAsyncContextManager
from typing import Protocol

import trio

from ..http import HandshakeError, WebSocketClosedError, open_websocket

CONNECT_PATH = "/v1/workers/connect"
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
CONNECT_TIMEOUT = 10.0
CLOSE_TIMEOUT = 5.0

ConnectionClosed = WebSocketClosedError
"""Raised by :class:`Connection`'s methods once the connection is closed (either side)."""

CONNECTION_LOST = (HandshakeError, WebSocketClosedError, OSError, trio.TooSlowError)
"""What ends a connection in a way that a reconnect may mend."""


class Connection(Protocol):
    """One open connection to the gateway."""

    async def send(self, message: str) -> None:
        """Send one text message; :data:`ConnectionClosed` once closed."""
        ...

    def send_nowait(self, message: str) -> None:
        """Queue one text message without waiting: it leaves with the next write (the next
        :meth:`send`'s, or the one made before the receiving task next reads);
        :data:`ConnectionClosed` once closed."""
        ...

    async def flush_queued(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run in a task of its own: write what :meth:`send_nowait` queued and the socket did
        not take at once, so the receiving task never waits for room (and reads on)."""
        ...

    async def receive(self) -> str:
        """The next text message; :data:`ConnectionClosed` once closed."""
        ...

    async def aclose(self, code: int = 1000, reason: str = "") -> None:
        """Close with ``code`` and ``reason`` (the close handshake, then the stream)."""
        ...


def open_connection(
    url: str, token: str | None, ssl_context: ssl.SSLContext | None
) -> AbstractAsyncContextManager[Connection]:
    """A connection to ``url``'s worker gateway (``Authorization: Bearer`` with ``token``),
    closed (1000) when the block ends."""
    headers = [("Authorization", f"Bearer {token}")] if token else []
    return open_websocket(
        url + CONNECT_PATH, ssl_context=ssl_context, headers=headers,
        max_message_bytes=MAX_MESSAGE_BYTES, connect_timeout=CONNECT_TIMEOUT,
        close_timeout=CLOSE_TIMEOUT,
    )  # fmt: skip
