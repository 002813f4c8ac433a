"""Orbit's HTTP/1.1 and WebSocket transport on trio: h11 parses requests, wsproto frames
WebSocket messages, and an :class:`Application` answers them.

Why not a general ASGI server: hypercorn spent about 0.45 ms of CPU on each request (an idle
timer task restarted per request, a lock and a nursery per response, ASGI message dicts),
which made the HTTP layer the largest cost of an execution. This transport does only what the
API and the worker gateway need, one task per connection, about 0.08 ms per request.

What it promises:

- **Limits.** A request head over :data:`MAX_HEAD_BYTES` is 431, a body over ``max_body_bytes``
  is 413 (before it is read when ``Content-Length`` says so), and either closes the connection;
  a body that does not arrive within :data:`BODY_TIMEOUT` closes it; a WebSocket message over
  the limit closes the socket with 1009.
- **Keep-alive.** A connection may carry any number of requests; one idle for
  ``keep_alive_timeout`` is closed.
- **Drain.** :meth:`Server.drain` stops accepting, closes idle connections, lets requests in
  flight finish (their answers say ``Connection: close``) and cancels what is left after the
  grace period.
- **Faults stay in their connection.** A malformed request is answered 400 and its connection
  closed; anything a connection raises is logged and ends only that connection.
"""

from __future__ import annotations

import contextlib
import logging
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Protocol
from urllib.parse import parse_qsl, unquote

import h11
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Message,
    Ping,
    TextMessage,
)
from wsproto.utilities import RemoteProtocolError as WsProtocolError

log = logging.getLogger("orbit.http")

MAX_HEAD_BYTES = 64 * 1024
BODY_TIMEOUT = 60.0
CLOSE_TIMEOUT = 5.0
READ_CHUNK = 65536


@dataclass
class Request:
    """One HTTP request: its path decoded, its query as a dict (the first of repeated keys),
    header names in lower case (repeated headers joined with ``, ``)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""

    @property
    def content_type(self) -> str:
        """The ``Content-Type`` header, or ``""``."""
        return self.headers.get("content-type", "")


@dataclass
class Response:
    """One HTTP answer; ``close`` ends the connection after it."""

    status: int
    body: bytes = b""
    content_type: str = "application/json"
    close: bool = False
    headers: list[tuple[str, str]] = field(default_factory=list)


Listeners = list[trio.abc.Listener[trio.abc.Stream]]


class SocketClosed(Exception):
    """The WebSocket is closed (by either side); nothing more can be received or sent."""


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


class WebSocket:
    """The server side of one WebSocket connection over an upgraded HTTP/1.1 stream.

    One task may receive while another sends: sends are serialized by a lock, and a ping or a
    close from the peer is answered by the receiving task under the same lock.
    """

    def __init__(
        self, stream: trio.abc.Stream, request: Request, leftover: bytes, max_message_bytes: int
    ) -> None:
        self._stream = stream
        self._ws = WSConnection(ConnectionType.SERVER)
        headers = [(name.encode("latin-1"), value.encode("latin-1"))
                   for name, value in request.headers.items()]  # fmt: skip
        self._ws.initiate_upgrade_connection(headers, request.path)
        self._leftover = leftover
        self._max = max_message_bytes
        self._send_lock = trio.StrictFIFOLock()
        self._closed = False
        self.accepted = False

    async def accept(self) -> None:
        """Complete the handshake (101 Switching Protocols)."""
        await self._send_raw(self._ws.send(AcceptConnection()))
        self.accepted = True
        if self._leftover:
            self._ws.receive_data(self._leftover)

    async def receive(self) -> str | bytes:
        """The next whole message; raises :class:`SocketClosed` once the socket is closed."""
        parts: list[str | bytes] = []
        size = 0
        while True:
            for event in self._ws.events():
                if isinstance(event, TextMessage | BytesMessage):
                    parts.append(event.data if isinstance(event.data, str) else bytes(event.data))
                    size += len(event.data)
                    if size > self._max:
                        await self.close(1009, "message over the size limit")
                        raise SocketClosed
                    if event.message_finished:
                        return _joined(parts)
                elif isinstance(event, Ping):
                    await self._send_raw(self._ws.send(event.response()))
                elif isinstance(event, CloseConnection):
                    await self._answer_close(event)
                    raise SocketClosed
            await self._feed()

    async def send(self, *messages: str) -> None:
        """Send text messages, in order, in one write; raises :class:`SocketClosed` once the
        socket is closed."""
        if self._closed:
            raise SocketClosed
        await self._send_raw(b"".join(self._ws.send(Message(data=data)) for data in messages))

    async def close(self, code: int, reason: str = "") -> None:
        """Send a close frame (once); the transport closes the stream when the handler ends."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(SocketClosed):
            await self._send_raw(self._ws.send(CloseConnection(code=code, reason=reason)))

    async def _feed(self) -> None:
        try:
            data = await self._stream.receive_some(READ_CHUNK)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        if not data:
            self._closed = True
            raise SocketClosed
        self._ws.receive_data(bytes(data))

    async def _answer_close(self, event: CloseConnection) -> None:
        if not self._closed:
            self._closed = True
            with contextlib.suppress(SocketClosed):
                await self._send_raw(self._ws.send(event.response()))

    async def _send_raw(self, data: bytes) -> None:
        try:
            async with self._send_lock:
                await self._stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._closed = True
            raise SocketClosed from None


def _joined(parts: list[str | bytes]) -> str | bytes:
    if len(parts) == 1:
        return parts[0]
    if isinstance(parts[0], str):
        return "".join(part for part in parts if isinstance(part, str))
    return b"".join(part for part in parts if isinstance(part, bytes))


class _HttpDate:
    """The ``Date`` header, formatted once a second."""

    def __init__(self) -> None:
        self._second = 0
        self._value = b""

    def now(self) -> bytes:
        second = int(time.time())
        if second != self._second:
            self._second = second
            self._value = formatdate(second, usegmt=True).encode()
        return self._value


class _Refused(Exception):
    """The request cannot be read; answer ``response`` and close."""

    def __init__(self, response: Response) -> None:
        self.response = response


class Server:
    """Serves an :class:`Application`: one task per connection, in a nursery the caller owns
    (so it can stop accepting and still let connections finish)."""

    def __init__(
        self, app: Application, limits: Limits, refusal: Callable[[int, str], Response]
    ) -> None:
        self._app = app
        self._limits = limits
        self._refusal = refusal  # (status, message) → the error answer the API would give
        self._date = _HttpDate()
        self._idle: set[trio.CancelScope] = set()
        self._draining = False
        self._open = 0
        self._none_open = trio.Event()
        self._accepting = trio.CancelScope()

    async def serve(
        self,
        listeners: Listeners,
        nursery: trio.Nursery,
        *,
        task_status: trio.TaskStatus[Listeners] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept connections on ``listeners`` (each served in ``nursery``) until
        :meth:`stop_accepting` or cancellation."""
        with self._accepting:
            await trio.serve_listeners(
                self._connection, listeners, handler_nursery=nursery, task_status=task_status
            )

    def stop_accepting(self) -> None:
        """Close the listeners; connections already open go on."""
        self._accepting.cancel()

    async def drain(self, grace: float) -> None:
        """Stop accepting, close idle connections and wait up to ``grace`` seconds for the busy
        ones."""
        self.stop_accepting()
        self._draining = True
        for scope in list(self._idle):
            scope.cancel()
        if self._open:
            with trio.move_on_after(grace):
                await self._none_open.wait()

    async def _connection(self, stream: trio.abc.Stream) -> None:
        self._open += 1
        try:
            await self._serve_requests(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError, OSError):
            pass  # the client went away
        except Exception:
            log.exception("a connection failed")
        finally:
            self._open -= 1
            if self._open == 0 and self._draining:
                self._none_open.set()
            with trio.CancelScope(shield=True) as scope:
                scope.deadline = trio.current_time() + CLOSE_TIMEOUT
                await _close(stream)

    async def _serve_requests(self, stream: trio.abc.Stream) -> None:
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        while not self._draining:
            head = await self._next_head(stream, connection)
            if head is None:
                return
            try:
                request = self._request(head)
                if _is_upgrade(request):
                    await self._upgrade(stream, connection, request)
                    return
                request.body = await self._body(stream, connection, request)
                if request.method == "HEAD":  # a GET without its body
                    request.method = "GET"
                response = await self._app.respond(request)
            except _Refused as refused:
                response = refused.response
            await self._send(stream, connection, response, with_body=head.method != b"HEAD")
            if connection.our_state is not h11.DONE or connection.their_state is not h11.DONE:
                return
            connection.start_next_cycle()

    async def _next_head(
        self, stream: trio.abc.Stream, connection: h11.Connection
    ) -> h11.Request | None:
        with trio.CancelScope() as scope:
            scope.deadline = trio.current_time() + self._limits.keep_alive_timeout
            self._idle.add(scope)
            try:
                while True:
                    event = self._next_event(connection)
                    if event is h11.NEED_DATA:
                        connection.receive_data(bytes(await stream.receive_some(READ_CHUNK)))
                        continue
                    if isinstance(event, h11.Request):
                        return event
                    return None  # ConnectionClosed or PAUSED
            except _Refused as refused:
                await self._send(stream, connection, refused.response)
                return None
            finally:
                self._idle.discard(scope)
        return None  # idle for too long, or draining

    def _next_event(self, connection: h11.Connection) -> object:
        try:
            return connection.next_event()
        except h11.RemoteProtocolError as exc:
            status = exc.error_status_hint
            message = (
                "the request head is over the server's limit"
                if status == 431
                else f"malformed HTTP request: {exc}"
            )
            raise _Refused(self._closing(self._refusal(status, message))) from None

    def _request(self, head: h11.Request) -> Request:
        target = head.target.decode("latin-1")
        raw_path, _, query = target.partition("?")
        headers: dict[str, str] = {}
        for name, value in head.headers:
            key, text = name.decode("latin-1"), value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        return Request(
            method=head.method.decode("latin-1"),
            path=unquote(raw_path),
            query=dict(reversed(parse_qsl(query, keep_blank_values=True))),
            headers=headers,
        )

    async def _body(
        self, stream: trio.abc.Stream, connection: h11.Connection, request: Request
    ) -> bytes:
        limit = self._limits.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _Refused(self._too_large())
        if connection.they_are_waiting_for_100_continue:
            continue_ = h11.InformationalResponse(status_code=100, headers=[])
            await stream.send_all(connection.send(continue_))
        chunks: list[bytes] = []
        size = 0
        with trio.move_on_after(BODY_TIMEOUT) as scope:
            while True:
                event = self._next_event(connection)
                if event is h11.NEED_DATA:
                    connection.receive_data(bytes(await stream.receive_some(READ_CHUNK)))
                elif isinstance(event, h11.Data):
                    size += len(event.data)
                    if size > limit:
                        raise _Refused(self._too_large())
                    chunks.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage):
                    return b"".join(chunks)
                else:
                    raise _Refused(
                        self._closing(self._refusal(400, "the request body ended early"))
                    )
        assert scope.cancelled_caught
        raise _Refused(self._closing(self._refusal(408, "the request body did not arrive in time")))

    def _too_large(self) -> Response:
        return self._closing(self._refusal(413, "the request body is over the server's limit"))

    @staticmethod
    def _closing(response: Response) -> Response:
        response.close = True
        return response

    async def _send(
        self,
        stream: trio.abc.Stream,
        connection: h11.Connection,
        response: Response,
        *,
        with_body: bool = True,
    ) -> None:
        close = response.close or self._draining
        headers = [
            (b"content-type", response.content_type.encode()),
            (b"content-length", str(len(response.body)).encode()),
            (b"date", self._date.now()),
            (b"server", b"orbit"),
        ]
        headers += [
            (name.encode("latin-1"), value.encode("latin-1")) for name, value in response.headers
        ]
        if close:
            headers.append((b"connection", b"close"))
        if response.status == 204:
            headers = [
                header
                for header in headers
                if header[0] not in (b"content-type", b"content-length")
            ]
        try:
            data = connection.send(h11.Response(status_code=response.status, headers=headers))
            if response.body and response.status != 204 and with_body:
                data += connection.send(h11.Data(data=response.body))
            data += connection.send(h11.EndOfMessage())
        except h11.LocalProtocolError:
            return  # nothing can be answered on this connection any more (it closes)
        await stream.send_all(data)

    async def _upgrade(
        self, stream: trio.abc.Stream, connection: h11.Connection, request: Request
    ) -> None:
        leftover, _ = connection.trailing_data
        try:
            socket = WebSocket(stream, request, bytes(leftover), self._limits.max_message_bytes)
        except WsProtocolError as exc:
            message = f"not a valid WebSocket handshake: {exc}"
            await self._send(stream, connection, self._closing(self._refusal(400, message)))
            return
        refusal = await self._app.websocket(request, socket)
        if refusal is not None and not socket.accepted:
            await self._send(stream, connection, self._closing(refusal))


def _is_upgrade(request: Request) -> bool:
    return (
        request.method == "GET"
        and request.headers.get("upgrade", "").lower() == "websocket"
        and "upgrade" in request.headers.get("connection", "").lower()
    )


async def _close(stream: trio.abc.Stream) -> None:
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        await stream.aclose()


async def open_listeners(
    bind: str, ssl_context: ssl.SSLContext | None
) -> tuple[Listeners, list[str]]:
    """Listeners on ``host:port`` (port 0: any free one) and the URLs they answer on."""
    host, _, port = bind.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    listeners = await trio.open_tcp_listeners(int(port), host=host)
    scheme = "https" if ssl_context is not None else "http"
    urls = []
    for listener in listeners:
        address, bound_port = listener.socket.getsockname()[:2]
        shown = f"[{address}]" if ":" in address else address
        urls.append(f"{scheme}://{shown}:{bound_port}")
    if ssl_context is None:
        return list(listeners), urls
    return [
        trio.SSLListener(listener, ssl_context, https_compatible=True) for listener in listeners
    ], urls
