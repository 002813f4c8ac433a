"""Orbit's HTTP/1.1, HTTP/2 and WebSocket transport on trio: :mod:`.http1` parses requests and
encodes answers, :mod:`.http2` serves connections that speak HTTP/2 (ALPN ``h2``, or the
connection preface in clear), :mod:`.websocket` carries upgraded connections, and an
:class:`Application` answers them.

Why not a general ASGI server: hypercorn spent about 0.45 ms of CPU on each request (an idle
timer task restarted per request, a lock and a nursery per response, ASGI message dicts),
which made the HTTP layer the largest cost of an execution. This transport does only what the
API and the worker gateway need, one task per connection, about 0.05 ms per request.

What it promises:

- **Limits** (:class:`~.application.Limits`; http-api.md, "Connection limits"). A request head
  over :data:`~.http1.MAX_HEAD_BYTES` is 431, a body over ``max_body_bytes`` is 413 (before it
  is read when ``Content-Length`` says so), and either closes the connection. A head must
  arrive whole within ``head_timeout`` of its first byte and a body within ``body_timeout`` of
  its head, else 408 and close: the deadlines are fixed when the request begins, so a client
  sending a byte at a time gains nothing. A write that makes no progress for
  ``write_timeout`` closes the connection. At ``max_connections`` the server stops accepting
  until a connection ends: new ones wait in the listen backlog (the kernel's, up to
  ``somaxconn``) and are served later, never refused. A WebSocket message over the limit,
  or in more than ``max_fragments`` frames, closes the socket with 1009.
- **Keep-alive.** A connection may carry any number of requests; one idle for
  ``keep_alive_timeout`` since its last answer is closed.
- **Drain.** :meth:`Server.drain` stops accepting, closes idle connections, lets requests in
  flight finish (their answers say ``Connection: close``) and cancels what is left after the
  grace period.
- **Faults stay in their connection.** A malformed request is answered 400 and its connection
  closed; anything a connection raises is logged and ends only that connection.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.utils import formatdate

import trio

from .application import Application, Limits
from .direct_stream import DirectListener, DirectStream
from .http1 import (
    CONTINUE,
    Refusal,
    Request,
    RequestReader,
    Response,
    encode_response,
    simple_request,
)
from .http2 import PREFACE, Http2Connection
from .keep_alive import KeepAlive
from .streams import Deadline, linger
from .websocket import READ_CHUNK, WebSocket

log = logging.getLogger("orbit.http")

CLOSE_TIMEOUT = 5.0
ACCEPT_RETRY = 0.1
"""Seconds an accept that failed for want of descriptors waits for a connection to end before
it tries again (trio's own ``serve_listeners`` waits the same)."""
_OUT_OF_DESCRIPTORS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}
_LATE = ("head", "body")  # waits that end in 408 when their deadline passes


Listeners = list[trio.abc.Listener[trio.abc.Stream]]


@dataclass
class _Rest:
    """Where a connection served without its cancel scope (:meth:`Server._serve_plainly`) goes
    on inside it: one of the three, or none for a connection that has read nothing yet (TLS)."""

    opening: bytes = b""  # the connection's first bytes: HTTP/2's preface, or a part of it
    data: bytes = b""  # a request that is not plain, or not whole
    unsent: bytes = b""  # the end of an answer the socket did not take at once
    close: bool = False  # the connection ends once ``unsent`` has left


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
        self._idle: set[trio.CancelScope] = set()  # TLS handshakes and HTTP/2 connections
        self._keep_alive = KeepAlive(limits.keep_alive_timeout)  # HTTP/1.1 connections
        self._draining = False
        self._open = 0  # accepted and not yet ended
        self._at_capacity = False  # said once in the log each time the limit is reached
        self._room = trio.lowlevel.ParkingLot()  # accept loops waiting for a connection to end
        self._none_open = trio.Event()  # set once accepting has stopped and none is open
        self._accepting = trio.CancelScope()

    async def serve(
        self,
        listeners: Listeners,
        nursery: trio.Nursery,
        *,
        task_status: trio.TaskStatus[Listeners] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept connections on ``listeners`` (each served in ``nursery``) until
        :meth:`stop_accepting` or cancellation; the listeners are closed then. Returns once
        accepting has stopped and no connection is left (idle ones are closed by their
        keep-alive timeout meanwhile)."""
        async with trio.open_nursery() as sweeping:
            sweeping.start_soon(self._keep_alive.sweep)
            with self._accepting:
                async with trio.open_nursery() as accepting:
                    for listener in listeners:
                        accepting.start_soon(self._accept, listener, nursery)
                    task_status.started(listeners)
            if self._open:
                await self._none_open.wait()
            sweeping.cancel_scope.cancel()

    async def _accept(
        self, listener: trio.abc.Listener[trio.abc.Stream], nursery: trio.Nursery
    ) -> None:
        """Accept while fewer than ``max_connections`` are open; at the cap, wait for one to
        end, so new connections wait in the listen backlog instead of being refused."""
        async with DirectListener.over(listener) as listener:
            while True:
                while self._open >= self._limits.max_connections:
                    self._say_at_capacity()
                    await self._room.park()
                try:
                    stream = await listener.accept()
                except OSError as exc:
                    if exc.errno not in _OUT_OF_DESCRIPTORS:
                        raise
                    log.error("accept failed (%s): out of descriptors; %d connections are open",
                              errno.errorcode[exc.errno], self._open)  # fmt: skip
                    with trio.move_on_after(ACCEPT_RETRY):  # a connection's end frees one
                        await self._room.park()
                    continue
                self._at_capacity = False
                self._open += 1  # counted here, not in its task: the cap is exact
                nursery.start_soon(self._connection, stream)

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
        self._keep_alive.cancel_all()
        if self._open:
            with trio.move_on_after(grace):
                await self._none_open.wait()

    # -- what an HTTP/2 connection reads of its server (http2.Host) --------------------------
    @property
    def app(self) -> Application:
        """The application served."""
        return self._app

    @property
    def limits(self) -> Limits:
        """The limits every connection keeps."""
        return self._limits

    @property
    def idle(self) -> set[trio.CancelScope]:
        """Scopes of connections waiting with nothing in flight (cancelled by a drain)."""
        return self._idle

    @property
    def draining(self) -> bool:
        """The server is shutting down."""
        return self._draining

    def statistics(self) -> dict[str, int]:
        """Connections open now, and the cap."""
        return {"open": self._open, "max_connections": self._limits.max_connections}

    def refusal(self, status: int, message: str) -> Response:
        """The error answer the API would give."""
        return self._refusal(status, message)

    def date(self) -> bytes:
        """The ``Date`` header's value."""
        return self._date.now()

    # -- connections ---------------------------------------------------------------------------
    async def _connection(self, stream: trio.abc.Stream) -> None:
        if not isinstance(stream, DirectStream):  # the direct listener's are already
            stream = DirectStream.over(stream)  # a plain socket without trio's wrappers
        out = Deadline(stream, self._limits.write_timeout)
        try:
            if isinstance(stream, DirectStream):
                rest = await self._serve_plainly(out, stream)
            else:
                rest = _Rest()
            if rest is not None:
                with out.enter():
                    await self._serve(out, rest)
                if out.scope.cancelled_caught and out.phase in _LATE:
                    await self._too_late(stream, out.phase)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError, OSError):
            pass  # the client went away
        except Exception:
            log.exception("a connection failed")
        finally:
            if isinstance(stream, DirectStream):  # first: a miss on trio's ABCs costs ~1.5 K
                stream.close(waited_on=False)  # no task of the connection is left to wait
            elif isinstance(stream, trio.SSLStream):
                await _close_tls(stream)
            else:
                await trio.aclose_forcefully(stream)
            self._keep_alive.end(out)
            self._open -= 1
            self._room.unpark()  # an accept loop at the cap may take one more
            if self._open == 0 and self._accepting.cancel_called:
                self._none_open.set()

    def _say_at_capacity(self) -> None:
        """Log once each time the cap is reached."""
        if not self._at_capacity:
            self._at_capacity = True
            log.warning(
                "%d connections are open (--max-connections): new ones wait in the listen "
                "backlog until one ends",
                self._open,
            )

    async def _too_late(self, stream: trio.abc.Stream, part: str) -> None:
        """408 for a head or body that did not arrive by its deadline (a write of its own)."""
        out = Deadline(stream, self._limits.write_timeout)
        with out.enter():
            late = f"the request {part} did not arrive in time; send it whole, promptly"
            await self._refuse(out, Refusal(408, late))

    async def _serve_plainly(self, out: Deadline, stream: DirectStream) -> _Rest | None:
        """HTTP/1.1 on a direct socket without the connection's cancel scope (entering and
        leaving one costs ~45,000 instructions), for as long as nothing needs a deadline: while
        each request comes plain and whole in one read (:func:`~.http1.simple_request`) and
        each answer leaves at once, which is most connections' whole life. The wait for the
        next request is the keep-alive sweeper's to end, by closing the socket
        (:meth:`~.streams.Deadline.cancel`). At the first thing that needs a deadline (HTTP/2's
        preface, a request in pieces or not plain, an answer the socket does not take at once)
        it returns what it holds, and the connection goes on inside its scope (:meth:`_serve`).
        Bytes already there when it begins are read without a wait (most of a burst's)."""
        data = stream.receive_now(READ_CHUNK)
        first = True
        while True:
            if data is None:
                data = await self._wait_plainly(out, stream)
            if not data:
                return None
            if first and (data.startswith(PREFACE) or PREFACE.startswith(data)):
                return _Rest(opening=data)
            if first and self._draining:  # as after each answer, below
                return None
            request = simple_request(data, self._limits.max_body_bytes)
            if request is None:
                return _Rest(data=data)
            first = False
            head_only = request.method == "HEAD"
            if head_only:  # a GET without its body
                request.method = "GET"
            response = await self._app.respond(request)
            close = response.close or self._draining or not request.keep_alive
            answer = encode_response(
                response, date=self._date.now(), close=close, with_body=not head_only
            )
            await stream.checkpoint()  # as every write: cancellable, and fair to the others
            sent = stream.send_now(answer)
            if sent < len(answer):
                return _Rest(unsent=answer[sent:], close=close)
            if close or self._draining:  # a drain begun since: it ended only the idle waits
                return None
            data = None

    async def _wait_plainly(self, out: Deadline, stream: DirectStream) -> bytes:
        """The next request's first bytes, on a connection without its scope: the wait ends at
        the keep-alive timeout or a drain (the socket closed under it: ClosedResourceError)."""
        self._keep_alive.begin(out)
        try:
            return await stream.receive_when_readable(READ_CHUNK)
        finally:
            self._keep_alive.end(out)

    async def _serve(self, out: Deadline, rest: _Rest) -> None:
        """HTTP/2 when the client asks for it (ALPN ``h2`` over TLS, or the connection preface
        in clear), HTTP/1.1 otherwise; from where :meth:`_serve_plainly` left (``rest``)."""
        if rest.unsent:
            await out.send(rest.unsent, restore=rest.close)
            if not rest.close:
                await self._serve_requests(out, b"")
            return
        if rest.data:
            await self._serve_requests(out, rest.data, plain=False)
            return
        stream = out.stream
        if not isinstance(stream, DirectStream) and isinstance(stream, trio.SSLStream):
            handshake_by = trio.current_time() + self._limits.head_timeout
            with self._idle_wait(handshake_by) as handshake:  # a TLS handshake is a head
                await stream.do_handshake()
            if handshake.cancelled_caught:
                return
            if stream.selected_alpn_protocol() == "h2":
                await Http2Connection(out, self, b"").serve()
                return
        opening = await self._opening(out, rest.opening)
        if opening.startswith(PREFACE):
            out.expect("served", math.inf)  # HTTP/2 keeps its own read deadlines
            await Http2Connection(out, self, opening).serve()
        elif opening:
            await self._serve_requests(out, opening)

    async def _opening(self, out: Deadline, opening: bytes) -> bytes:
        """The first bytes of a connection: enough to tell the HTTP/2 preface from a request.
        ``opening``: those read already (none yet over TLS)."""
        if not opening:
            try:
                opening = bytes(await self._receive_idle(out))
            finally:
                self._keep_alive.end(out)
        if opening and len(opening) < len(PREFACE) and PREFACE.startswith(opening):
            # Only a few bytes came: the head's deadline runs from now. Otherwise the HTTP/1.1
            # reader sets it, with no wait in between (one deadline move fewer per connection).
            out.expect("head", trio.current_time() + self._limits.head_timeout)
        while opening and len(opening) < len(PREFACE) and PREFACE.startswith(opening):
            more = await out.stream.receive_some(READ_CHUNK)
            if not more:
                return b""
            opening += more
        return opening

    async def _serve_requests(self, out: Deadline, data: bytes, *, plain: bool = True) -> None:
        """HTTP/1.1 requests, the first of them beginning with ``data``; ``plain`` False: that
        one was found not plain already (httptools reads it at once)."""
        reader = RequestReader(self._limits.max_body_bytes, plain=plain)
        try:
            if data:
                reader.feed(data)
        except Refusal as refusal:
            await self._refuse(out, refusal)
            return
        while not self._draining:
            try:
                request = await self._next_request(out, reader)
            except Refusal as refusal:
                await self._refuse(out, refusal)
                return
            if request is None:
                return
            if reader.upgraded is not None:  # the parser stops at an upgrade: nothing follows
                if _is_upgrade(request):
                    await self._upgrade(out, request, reader.upgraded)
                    return
                try:  # another protocol (h2c, say): answered in HTTP/1.1, then closed
                    request.body = await self._rest_of_body(out, request, reader.upgraded)
                except Refusal as refusal:
                    await self._refuse(out, refusal)
                    return
                request.keep_alive = False
            head_only = request.method == "HEAD"
            if head_only:  # a GET without its body
                request.method = "GET"
            response = await self._app.respond(request)
            close = response.close or self._draining or not request.keep_alive
            await self._answer(out, response, close=close, with_body=not head_only)
            if close:
                return

    async def _next_request(self, out: Deadline, reader: RequestReader) -> Request | None:
        """The next whole request; None when the client closed, idled past the keep-alive
        timeout, or the server drains while the connection is idle. Each deadline is fixed
        once, when its wait begins: reads that bring a byte do not push it."""
        head_by, body_by = math.inf, math.inf
        stream = out.stream
        try:
            while True:
                request = reader.next_request()
                if request is not None:
                    out.expect("served", math.inf)  # the application answers in its own time
                    return request
                if reader.busy:  # a request has begun: its own deadlines from now on
                    self._keep_alive.end(out)
                if reader.expects_continue:
                    reader.expects_continue = False
                    await out.send(CONTINUE)
                if reader.in_head:
                    head_by = min(head_by, trio.current_time() + self._limits.head_timeout)
                    out.expect("head", head_by)
                    data = await stream.receive_some(READ_CHUNK)
                elif reader.busy:
                    body_by = min(body_by, trio.current_time() + self._limits.body_timeout)
                    out.expect("body", body_by)
                    data = await stream.receive_some(READ_CHUNK)
                else:  # just after an answer: the client has not sent more yet, as a rule
                    data = await self._receive_idle(out)
                if not data:
                    return None
                reader.feed(bytes(data))
        finally:
            self._keep_alive.end(out)  # the wait is over, whichever way it ended

    async def _rest_of_body(self, out: Deadline, request: Request, received: bytes) -> bytes:
        """The body of a request the parser left at its upgrade headers (by its length)."""
        if "chunked" in request.headers.get("transfer-encoding", "").lower():
            raise Refusal(400, "a chunked body with an Upgrade header is not supported")
        # llhttp checked the value is under 2**64, but takes any number of leading zeros, and
        # int() refuses over 4,300 digits
        declared = request.headers.get("content-length", "0").lstrip("0") or "0"
        length = int(declared) if declared.isdigit() else 0
        if length > self._limits.max_body_bytes:
            raise Refusal(413, "the request body is over the server's limit")
        body = bytearray(received)
        out.expect("body", trio.current_time() + self._limits.body_timeout)
        while len(body) < length:
            data = await out.stream.receive_some(READ_CHUNK)
            if not data:
                raise Refusal(400, "the request body ended early")
            body += data
        return bytes(body[:length])

    async def _receive_idle(self, out: Deadline) -> bytes | bytearray:
        """The first bytes of the next request. The connection waits as an idle one (no trio
        deadline: :mod:`.keep_alive`) until its caller ends the wait: it ends at the keep-alive
        timeout or when the server drains. Nothing is there as a rule (a read just found
        nothing, or the client has had no time to send more since its answer), so a direct
        socket waits before it reads."""
        out.expect("idle", math.inf)
        self._keep_alive.begin(out)
        stream = out.stream
        if isinstance(stream, DirectStream):
            return await stream.receive_when_readable(READ_CHUNK)
        return await stream.receive_some(READ_CHUNK)

    @contextlib.contextmanager
    def _idle_wait(self, deadline: float) -> Iterator[trio.CancelScope]:
        """A wait with nothing in flight: it ends at ``deadline`` or when the server drains."""
        with trio.CancelScope(deadline=deadline) as scope:
            self._idle.add(scope)
            try:
                yield scope
            finally:
                self._idle.discard(scope)

    async def _refuse(self, out: Deadline, refusal: Refusal) -> None:
        """Answer a request that could not be taken, then :func:`~.streams.linger` (the rest of
        a refused body may still be on its way)."""
        out.expect("refused", math.inf)
        response = self._refusal(refusal.status, refusal.message)
        response.headers.extend(refusal.headers)
        await self._answer(out, response, close=True)
        await linger(out.stream)

    async def _answer(
        self, out: Deadline, response: Response, *, close: bool, with_body: bool = True
    ) -> None:
        """Send ``response``; on a connection that goes on, the next request's wait sets the
        deadline (so the write's is not restored first)."""
        await out.send(
            encode_response(response, date=self._date.now(), close=close, with_body=with_body),
            restore=close,
        )

    async def _upgrade(self, out: Deadline, request: Request, leftover: bytes) -> None:
        try:
            socket = WebSocket(out, request, leftover, self._limits)
        except Refusal as bad_handshake:
            await self._refuse(out, bad_handshake)
            return
        refusal = await self._app.websocket(request, socket)
        if socket.accepted:
            await socket.finish()
        elif refusal is not None:
            await self._answer(out, refusal, close=True)


def _is_upgrade(request: Request) -> bool:
    return (
        request.method == "GET"
        and request.headers.get("upgrade", "").lower() == "websocket"
        and "upgrade" in request.headers.get("connection", "").lower()
    )


async def _close_tls(stream: trio.SSLStream[trio.abc.Stream]) -> None:
    """Say TLS close_notify (for at most :data:`CLOSE_TIMEOUT`, whatever cancelled the
    connection), then close the socket."""
    with trio.CancelScope(shield=True) as scope:
        scope.deadline = trio.current_time() + CLOSE_TIMEOUT
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
