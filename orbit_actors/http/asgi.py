"""The same :class:`~.application.Application` as an ASGI app, so that hypercorn (on its trio
worker) can serve it instead of this package's transport (``orbit server --server hypercorn``).

The application sees what it sees under the transport: a :class:`~.http1.Request` answered by a
:class:`~.http1.Response` (HEAD answered as GET without the body), and a
:class:`~.application.ServerSocket` for a WebSocket upgrade, whose refusal is sent as an HTTP
answer (the ASGI ``websocket.http.response`` extension; hypercorn has it). A body over
``max_body_bytes`` is 413 (before it is read when ``content-length`` says so). The connection
limits that are the server's to keep (timeouts, connection counts, HTTP/2 streams, WebSocket
framing) are hypercorn's own under this adapter.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .application import Application, Limits
from .http1 import Refusal, Request, Response, request_of
from .websocket import SocketClosed

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class AsgiApp:
    """``application`` as an ASGI 3 app; ``refusal`` gives the error answer the API would
    give for what the adapter refuses itself (413)."""

    def __init__(
        self, application: Application, limits: Limits, refusal: Callable[[int, str], Response]
    ) -> None:
        self._app = application
        self._limits = limits
        self._refusal = refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection scope (``http``, ``websocket`` or ``lifespan``)."""
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            await self._websocket(scope, receive, send)
        elif kind == "lifespan":
            await _lifespan(receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            body = await _body(scope, receive, self._limits.max_body_bytes)
        except Refusal as refused:
            await _respond(send, self._refusal(refused.status, refused.message), close=True)
            return
        if body is None:
            return  # the client left before its body arrived
        request = _request(scope, body)
        head_only = request.method == "HEAD"
        if head_only:
            request.method = "GET"
        response = await self._app.respond(request)
        await _respond(send, response, with_body=not head_only)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        socket = AsgiSocket(receive, send)
        refused = await self._app.websocket(_request(scope, b""), socket)
        if socket.accepted or refused is None:
            await socket.close(1000)
        elif "websocket.http.response" in scope.get("extensions", {}):
            await send({"type": "websocket.http.response.start", "status": refused.status,
                        "headers": _headers(refused)})  # fmt: skip
            await send({"type": "websocket.http.response.body", "body": refused.body})
        else:
            await send({"type": "websocket.close", "code": 1008})


class AsgiSocket:
    """A :class:`~.application.ServerSocket` over ASGI ``websocket.*`` messages."""

    def __init__(self, receive: Receive, send: Send) -> None:
        self._receive = receive
        self._send = send
        self._closed = False
        self.accepted = False

    async def accept(self) -> None:
        """Complete the handshake."""
        await self._send({"type": "websocket.accept"})
        self.accepted = True

    async def receive(self) -> str | bytes:
        """The next whole message; :class:`~.websocket.SocketClosed` once the client left."""
        if self._closed:
            raise SocketClosed
        message = await self._receive()
        if message["type"] != "websocket.receive":
            self._closed = True
            raise SocketClosed
        text = message.get("text")
        return text if text is not None else bytes(message.get("bytes") or b"")

    async def send_utf8(self, *payloads: bytes) -> None:
        """Send text messages, each given as its UTF-8 bytes, in order;
        :class:`~.websocket.SocketClosed` once closed."""
        for payload in payloads:
            await self._put({"type": "websocket.send", "text": payload.decode()})

    async def close(self, code: int, reason: str = "") -> None:
        """Send a close frame (once)."""
        if self._closed:
            return
        with contextlib.suppress(SocketClosed):
            await self._put({"type": "websocket.close", "code": code, "reason": reason})
        self._closed = True

    async def _put(self, message: Message) -> None:
        if self._closed:
            raise SocketClosed
        try:
            await self._send(message)
        except Exception:  # the server's own error for a send on a closed connection
            self._closed = True
            raise SocketClosed from None


async def _body(scope: Scope, receive: Receive, limit: int) -> bytes | None:
    """The request body, or None when the client disconnected first; :class:`~.http1.Refusal`
    413 when it is over ``limit``."""
    declared = _header(scope, b"content-length")
    if declared.isdigit() and int(declared) > limit:
        raise Refusal(413, "the request body is over the server's limit")
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if len(body) > limit:
            raise Refusal(413, "the request body is over the server's limit")
        if not message.get("more_body", False):
            return bytes(body)


def _request(scope: Scope, body: bytes) -> Request:
    raw_path: bytes = scope.get("raw_path") or scope["path"].encode("utf-8")
    query: bytes = scope.get("query_string", b"")
    target = raw_path.decode("latin-1") + ("?" + query.decode("latin-1") if query else "")
    headers = [
        (name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]
    ]
    return request_of(scope.get("method", "GET"), target, headers, body)


def _header(scope: Scope, name: bytes) -> str:
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == name), "")


def _headers(response: Response) -> list[tuple[bytes, bytes]]:
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1"))
               for name, value in response.headers]  # fmt: skip
    if response.status != 204:
        headers.append((b"content-type", response.content_type.encode("latin-1")))
        headers.append((b"content-length", str(len(response.body)).encode()))
    return headers


async def _respond(
    send: Send, response: Response, *, with_body: bool = True, close: bool = False
) -> None:
    headers = _headers(response)
    if close or response.close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    body = response.body if with_body and response.status != 204 else b""
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive: Receive, send: Send) -> None:
    """Nothing to start or stop here: whoever runs the server opens what the app needs."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
