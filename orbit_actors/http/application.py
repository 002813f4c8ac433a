"""What the transport serves (:class:`Application`), the WebSocket it hands over
(:class:`ServerSocket`) and the limits every connection keeps: the narrow interface between the
HTTP/1.1, HTTP/2 and WebSocket code (or hypercorn, through :mod:`.asgi`) and the API on top."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .http1 import Request, Response


class ServerSocket(Protocol):
    """The server side of one WebSocket, whichever server carries it (:class:`~.websocket.
    WebSocket` on Orbit's transport, :class:`~.asgi.AsgiSocket` under hypercorn)."""

    async def accept(self) -> None:
        """Complete the handshake."""
        ...

    async def receive(self) -> str | bytes:
        """The next whole message; raises :class:`~.websocket.SocketClosed` once closed."""
        ...

    async def send_utf8(self, *payloads: bytes) -> None:
        """Send text messages, each given as its UTF-8 bytes, in order; raises
        :class:`~.websocket.SocketClosed` once closed."""
        ...

    async def close(self, code: int, reason: str = "") -> None:
        """Send a close frame (once)."""
        ...


class Application(Protocol):
    """What the transport serves."""

    async def respond(self, request: Request) -> Response:
        """The answer to a plain HTTP request; never raises."""
        ...

    async def websocket(self, request: Request, socket: ServerSocket) -> Response | None:
        """Serve a WebSocket upgrade: either answer with a refusal (sent as HTTP, no socket)
        or :meth:`ServerSocket.accept` and serve it until it closes."""
        ...


@dataclass(frozen=True)
class Limits:
    """How much a client may send, how long it may take, and how many connections are served
    at once (http-api.md, "Connection limits"). Times are seconds; tests shorten them."""

    max_body_bytes: int
    max_message_bytes: int
    keep_alive_timeout: float = 75.0  # an idle connection is closed
    head_timeout: float = 30.0  # from a request's first byte to the end of its head
    body_timeout: float = 60.0  # from the end of the head to the end of the body
    write_timeout: float = 30.0  # a write that makes no progress for this long closes
    max_connections: int = 10_000  # at the cap new connections wait in the listen backlog
    max_resets: int = 200  # HTTP/2 streams a client may reset within ``reset_window``
    reset_window: float = 10.0
    max_fragments: int = 1024  # WebSocket frames one message may be split into
