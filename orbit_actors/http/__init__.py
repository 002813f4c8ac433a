"""Orbit's HTTP/1.1, HTTP/2 and WebSocket transport on trio, a package of its own: it imports
nothing else of Orbit (the layer test checks it). What it serves is an :class:`Application`
(``respond(Request) -> Response`` and a WebSocket route); see :mod:`.transport`. It also holds
a WebSocket client (:func:`open_websocket`, :mod:`.client_open`), which the worker SDK uses."""

from .application import Application, Limits
from .client_handshake import HandshakeError
from .client_open import connect_websocket, open_websocket
from .client_socket import ClientWebSocket, CloseReason, WebSocketClosedError
from .http1 import Request, Response
from .transport import Server, open_listeners
from .websocket import SocketClosed, WebSocket

__all__ = [
    "Application",
    "ClientWebSocket",
    "CloseReason",
    "HandshakeError",
    "Limits",
    "Request",
    "Response",
    "Server",
    "SocketClosed",
    "WebSocket",
    "WebSocketClosedError",
    "connect_websocket",
    "open_listeners",
    "open_websocket",
]
