"""HTTP/2 on the same application as HTTP/1.1 (http-api.md: "JSON over HTTP/1.1 and HTTP/2").

h2 (python-hyper's sans-I/O HTTP/2 state machine) frames the connection and keeps its streams;
this module does the I/O on trio. A client reaches it by ALPN ``h2`` over TLS or, in clear, by
opening with the connection preface (prior knowledge); an ``Upgrade: h2c`` request is answered
in HTTP/1.1 (the upgrade is optional for a server).

Each request stream is answered in a task of its own, so a long ``wait`` does not hold up the
streams beside it. The limits are HTTP/1.1's: a header list over
:data:`~.http1.MAX_HEAD_BYTES` is refused by h2 itself, a body over ``max_body_bytes`` is 413 on
its stream (announced by ``content-length`` or not) and that stream is reset, the others go on.
A connection with nothing in flight closes after the keep-alive timeout, one whose request
bodies stall after the body timeout; a drain lets answers in flight finish and then says
GOAWAY. A client breaking the protocol gets one GOAWAY with h2's error code. A client resetting
more than ``max_resets`` streams within ``reset_window`` (the "rapid reset" attack,
CVE-2023-44487) gets GOAWAY ``ENHANCE_YOUR_CALM``; at most :data:`MAX_STREAMS` streams are open
at once. An answer whose flow-control window stays shut, or whose write makes no progress, for
the write timeout ends the connection.
"""

from __future__ import annotations

import contextlib
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import trio

from .application import Application, Limits
from .http1 import MAX_HEAD_BYTES, Request, Response, request_of
from .streams import Deadline, linger, receive_or_end

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
MAX_STREAMS = 100
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"}


class Host(Protocol):
    """What an HTTP/2 connection needs of the server it belongs to."""

    @property
    def app(self) -> Application:
        """The application served."""
        ...

    @property
    def limits(self) -> Limits:
        """The limits every connection keeps."""
        ...

    @property
    def idle(self) -> set[trio.CancelScope]:
        """Scopes of connections waiting with nothing in flight (cancelled by a drain)."""
        ...

    @property
    def draining(self) -> bool:
        """The server is shutting down."""
        ...

    def refusal(self, status: int, message: str) -> Response:
        """The error answer the API would give."""
        ...

    def date(self) -> bytes:
        """The ``Date`` header's value."""
        ...


@dataclass
class _Incoming:
    """A request stream whose body is still arriving."""

    headers: list[tuple[bytes, bytes]]
    body: bytearray = field(default_factory=bytearray)


class Http2Connection:
    """One HTTP/2 connection; :meth:`serve` returns when it is over (the caller closes the
    stream)."""

    def __init__(self, out: Deadline, host: Host, opening: bytes) -> None:
        self._stream = out.stream
        self._out = out
        self._host = host
        self._opening = opening
        self._limits = host.limits
        config = h2.config.H2Configuration(client_side=False, header_encoding=None)
        self._h2 = h2.connection.H2Connection(config=config)
        self._h2.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_STREAMS,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: MAX_HEAD_BYTES,
            },
        )
        self._send_lock = trio.StrictFIFOLock()
        self._incoming: dict[int, _Incoming] = {}
        self._answering: dict[int, trio.CancelScope] = {}
        self._window_opened: dict[int, trio.Event] = {}
        self._reading = trio.CancelScope()
        self._resets: deque[float] = deque()  # when the client reset streams, oldest first
        self._broken = False  # the client broke the protocol or left
        self._gone = False  # the client closed its side
        self._goaway_sent = False

    async def serve(self) -> None:
        """Serve streams until the client leaves, idles out, breaks the protocol or the server
        drains; answers in flight are finished first, then GOAWAY is sent."""
        self._h2.initiate_connection()
        async with trio.open_nursery() as answers:
            with self._reading:
                data: bytes | bytearray = self._opening  # empty after ALPN
                while self._take(data, answers):
                    await self._flush()
                    self._rearm()
                    data = await receive_or_end(self._stream)
                    if not data:
                        self._broken = self._gone = True
                        break
            if self._broken:  # nobody is left to read the answers in flight
                answers.cancel_scope.cancel()
        self._host.idle.discard(self._reading)
        if not self._goaway_sent:
            with contextlib.suppress(h2.exceptions.ProtocolError):
                self._h2.close_connection()
        await self._flush()
        if self._broken and not self._gone:  # the rest of what it sent is still unread
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await linger(self._stream)

    def _rearm(self) -> None:
        """Set how long the next read may wait: unbounded while answers are in flight, the body
        timeout while request bodies are arriving, else the keep-alive timeout (and then a drain
        may end the connection)."""
        scope, idle = self._reading, self._host.idle
        if self._answering:
            scope.deadline, quiet = math.inf, False
        elif self._incoming:
            scope.deadline, quiet = trio.current_time() + self._limits.body_timeout, False
        else:
            scope.deadline = trio.current_time() + self._limits.keep_alive_timeout
            quiet = True
        if quiet and self._host.draining:
            scope.cancel()
        elif quiet:
            idle.add(scope)
        else:
            idle.discard(scope)

    def _take(self, data: bytes | bytearray, answers: trio.Nursery) -> bool:
        """Feed received bytes to h2 and act on its events; False when the connection ends."""
        try:
            events = self._h2.receive_data(bytes(data))
        except h2.exceptions.ProtocolError:
            self._broken = self._goaway_sent = True
            return False  # h2 has queued GOAWAY with its error code
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self._begin(event.stream_id, event.headers or [])
            elif isinstance(event, h2.events.DataReceived):
                self._h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                self._body(event.stream_id, event.data or b"")
            elif isinstance(event, h2.events.StreamEnded):
                self._ended(event.stream_id, answers)
            elif isinstance(event, h2.events.StreamReset):
                self._reset(event.stream_id)
                if event.remote_reset and self._too_many_resets():
                    return False
            elif isinstance(event, h2.events.WindowUpdated | h2.events.RemoteSettingsChanged):
                self._windows_opened(getattr(event, "stream_id", 0))
            elif isinstance(event, h2.events.ConnectionTerminated):
                return False
        return True

    def _begin(self, stream_id: int, headers: list[tuple[bytes, bytes]]) -> None:
        incoming = self._incoming[stream_id] = _Incoming(headers)
        declared = _header(incoming.headers, b"content-length")
        if declared.isdigit() and int(declared) > self._limits.max_body_bytes:
            self._refuse_body(stream_id)

    def _body(self, stream_id: int, data: bytes) -> None:
        incoming = self._incoming.get(stream_id)
        if incoming is None:  # refused or reset: its bytes are counted and dropped
            return
        incoming.body += data
        if len(incoming.body) > self._limits.max_body_bytes:
            self._refuse_body(stream_id)

    def _ended(self, stream_id: int, answers: trio.Nursery) -> None:
        incoming = self._incoming.pop(stream_id, None)
        if incoming is None:
            return
        request, head_only = _request(incoming)
        scope = self._answering[stream_id] = trio.CancelScope()
        answers.start_soon(self._answer, stream_id, request, head_only, scope)

    def _reset(self, stream_id: int) -> None:
        self._incoming.pop(stream_id, None)
        scope = self._answering.get(stream_id)
        if scope is not None:
            scope.cancel()
        self._windows_opened(stream_id)

    def _too_many_resets(self) -> bool:
        """Count a reset by the client; past ``max_resets`` within ``reset_window``, say
        GOAWAY ``ENHANCE_YOUR_CALM``: each stream opened and reset costs the server a request's
        work and the client nothing."""
        now = trio.current_time()
        resets = self._resets
        resets.append(now)
        while resets[0] < now - self._limits.reset_window:
            resets.popleft()
        if len(resets) <= self._limits.max_resets:
            return False
        self._h2.close_connection(error_code=h2.errors.ErrorCodes.ENHANCE_YOUR_CALM)
        self._broken = self._goaway_sent = True
        return True

    def _refuse_body(self, stream_id: int) -> None:
        """413 on the stream, then reset it: the client stops sending, the connection stays."""
        del self._incoming[stream_id]
        refusal = self._host.refusal(413, "the request body is over the server's limit")
        with contextlib.suppress(h2.exceptions.ProtocolError):
            self._h2.send_headers(stream_id, self._head(refusal, len(refusal.body)))
            self._h2.send_data(stream_id, refusal.body, end_stream=True)
            self._h2.reset_stream(stream_id, h2.errors.ErrorCodes.NO_ERROR)

    async def _answer(
        self, stream_id: int, request: Request, head_only: bool, scope: trio.CancelScope
    ) -> None:
        try:
            with scope:
                response = await self._host.app.respond(request)
                body = b"" if head_only or response.status == 204 else response.body
                await self._send(stream_id, self._head(response, len(response.body)), body)
        finally:
            del self._answering[stream_id]
            self._window_opened.pop(stream_id, None)
            self._rearm()

    def _head(self, response: Response, length: int) -> list[tuple[bytes, bytes]]:
        head = [(b":status", str(response.status).encode()), (b"date", self._host.date()),
                (b"server", b"orbit")]  # fmt: skip
        if response.status != 204:
            head += [(b"content-type", response.content_type.encode("latin-1")),
                     (b"content-length", str(length).encode())]  # fmt: skip
        for name, value in response.headers:
            if name.lower() not in _HOP_BY_HOP:
                head.append((name.lower().encode("latin-1"), value.encode("latin-1")))
        return head

    async def _send(self, stream_id: int, head: list[tuple[bytes, bytes]], body: bytes) -> None:
        """Headers, then the body as the peer's flow-control windows allow."""
        h2c = self._h2
        try:
            h2c.send_headers(stream_id, head, end_stream=not body)
            await self._flush()
            sent = 0
            while sent < len(body):
                window = min(h2c.local_flow_control_window(stream_id), h2c.max_outbound_frame_size)
                if window <= 0:
                    await self._window_wait(stream_id)
                    continue
                piece = body[sent : sent + window]
                sent += len(piece)
                h2c.send_data(stream_id, piece, end_stream=sent == len(body))
                await self._flush()
        except h2.exceptions.ProtocolError:
            pass  # the stream was reset or the connection ended: nobody waits for the rest

    async def _window_wait(self, stream_id: int) -> None:
        """Wait for the client to open the stream's window; a client that keeps it shut for the
        write timeout has stopped reading: the connection ends as for a stalled write."""
        opened = self._window_opened[stream_id] = trio.Event()
        with trio.move_on_after(self._limits.write_timeout) as waited:
            await opened.wait()
        if waited.cancelled_caught:
            self._out.stall()
            await trio.lowlevel.checkpoint()  # cancelled by the stall: this answer ends here

    def _windows_opened(self, stream_id: int) -> None:
        """Wake the senders a WINDOW_UPDATE or a settings change may have unblocked."""
        waiting = list(self._window_opened.values()) if stream_id == 0 else [
            self._window_opened.get(stream_id)
        ]  # fmt: skip
        for event in waiting:
            if event is not None:
                event.set()

    async def _flush(self) -> None:
        async with self._send_lock:
            data = self._h2.data_to_send()
            if data:
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await self._out.send(data)


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str:
    return next((value.decode("latin-1") for key, value in headers if key == name), "")


def _request(incoming: _Incoming) -> tuple[Request, bool]:
    """The request a finished stream carries, and whether it is a HEAD (answered as GET
    without the body)."""
    pseudo: dict[bytes, bytes] = {}
    headers: list[tuple[str, str]] = []
    for name, value in incoming.headers:
        if name.startswith(b":"):
            pseudo[name] = value
        else:
            headers.append((name.decode("latin-1"), value.decode("latin-1")))
    if b":authority" in pseudo:
        headers.append(("host", pseudo[b":authority"].decode("latin-1")))
    method = pseudo.get(b":method", b"GET").decode("latin-1")
    target = pseudo.get(b":path", b"/").decode("latin-1")
    head_only = method == "HEAD"
    request = request_of("GET" if head_only else method, target, headers, bytes(incoming.body))
    return request, head_only
