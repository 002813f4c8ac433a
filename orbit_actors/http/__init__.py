"""Orbit's HTTP/1.1, HTTP/2 and WebSocket transport on trio, a package of its own: it imports
nothing else of Orbit (the layer test checks it). What it serves is an :class:`Application`
(``respond(Request) -> Response`` and a WebSocket route); see :mod:`.transport`."""

from .application import Application, Limits
from .http1 import Request, Response
from .transport import Server, open_listeners
from .websocket import SocketClosed, WebSocket

__all__ = [
    "Application",
    "Limits",
    "Request",
    "Response",
    "Server",
    "SocketClosed",
    "WebSocket",
    "open_listeners",
]
