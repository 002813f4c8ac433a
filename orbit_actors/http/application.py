"""What the transport serves (:class:`Application`) and the limits every connection keeps: the
narrow interface between the HTTP/1.1, HTTP/2 and WebSocket code and the API on top of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .http1 import Request, Response
from .websocket import WebSocket


class Application(Protocol):
    """What the transport serves."""

    async def respond(self, request: Request) -> Response:
        """The answer to a plain HTTP request; never raises."""
        ...

    async def websocket(self, request: Request, socket: WebSocket) -> Response | None:
        """Serve a WebSocket upgrade: either answer with a refusal (sent as HTTP, no socket)
        or :meth:`WebSocket.accept` and serve it until it closes."""
        ...


@dataclass(frozen=True)
class Limits:
    """How much a client may send, and how long a connection may idle."""

    max_body_bytes: int
    max_message_bytes: int
    keep_alive_timeout: float = 75.0
