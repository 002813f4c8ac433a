"""The worker gateway: one WebSocket connection carried into a transport-free
:class:`~orbit_actors.actors.sessions.Connection`.

Frames are decoded into protocol messages; a frame that is not a valid message is answered with
an ``error`` frame and the connection stays, until ten protocol errors in a row close it (1008).
Results are handled concurrently (each is acknowledged once durable, so one slow commit does
not hold back the next result) while registration, heartbeats and credit stay in order.
Outgoing messages go through one writer task, so the session layer's ``send`` never blocks.

What waits to be sent is bounded by the worker's credit (http-api.md, "Connection limits"):
``task`` frames by the pool, which pushes a session no more tokens than its concurrency (plus
those it cancelled and the worker has not yet reported), so a worker that takes its whole
credit at once waits for nothing here; every other frame either answers one the worker sent —
and the reader stops reading while :data:`MAX_UNANSWERED` are owed — or is one of the server's
own (a cancel), so at most :data:`MAX_OUTBOX` of them wait. A worker that stops reading stalls
the writer: after :data:`WRITE_STALL` seconds without a piece of a write finished (or if its
cancels pile past the bound) it is closed with 1008, and the session is lost as when a worker
vanishes: its tasks become uncertain after the session timeout unless it resumes.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from typing import Any

import trio

from ..actors.sessions import Connection
from ..errors import OrbitError
from ..http.application import ServerSocket as Socket
from ..http.websocket import SocketClosed
from ..runtime import Runtime
from ..wire import messages as wire
from ..wire.server_fields import TaskFields

log = logging.getLogger("orbit.gateway")

MAX_PROTOCOL_ERRORS = 10
MAX_OUTBOX = 1024  # frames other than tasks waiting to be sent to one worker
MAX_UNANSWERED = MAX_OUTBOX // 2  # results in flight and answers unsent; then reading pauses
WRITE_STALL = 30.0  # seconds a piece of a write may take before the worker counts as not reading
WRITE_PIECE = 256  # frames per piece: a large batch read slowly but steadily is progress
OVERFLOW_CLOSE_WAIT = 2.0  # seconds to try the 1008 close frame on a worker that is not reading


class _Close:
    def __init__(self, code: int, reason: str) -> None:
        self.code = code
        self.reason = reason


class _Outbox:
    """Frames waiting for the writer task (see the module's docstring for their bounds); a
    worker found not reading ends serving (``serving`` is cancelled) with :attr:`overflowed`
    saying why."""

    def __init__(self, serving: trio.CancelScope) -> None:
        self._frames: deque[bytes] = deque()  # each message's UTF-8 JSON
        self._close: _Close | None = None  # once queued, nothing more is
        self._serving = serving
        self._writer = trio.lowlevel.ParkingLot()  # the writer waiting for frames
        self._room = trio.lowlevel.ParkingLot()  # the reader waiting for answers to leave
        self._others = 0  # frames waiting that are not tasks
        self.results = 0  # results of this worker being handled (each owes an answer)
        self.overflowed = ""  # why the worker was found not reading
        self.sent_error = False  # since the last frame received

    def send(self, message: wire.ServerMessage) -> None:
        """Queue ``message`` (the session layer's ``send``: it never blocks); tasks come
        through :meth:`send_task`."""
        if isinstance(message, wire.ErrorMessage):
            self.sent_error = True
        self._queue_other(wire.encode_utf8(message))

    def send_task(self, task: TaskFields) -> None:
        """Queue a task (the session layer's ``send_task``), encoded from its fields."""
        self._queue(wire.encode_task(task))

    def send_ack(
        self, token: str, accepted: bool, reason: str | None, ref: str | int | None
    ) -> None:
        """Queue a result's ``ack`` (the session layer's ``send_ack``), encoded without its
        model."""
        self._queue_other(wire.encode_ack(token, accepted, reason, ref))

    def close(self, code: int, reason: str) -> None:
        """Queue the close frame: it leaves after what was queued before it."""
        if self._close is None:
            self._close = _Close(code, reason)
            self._writer.unpark()

    def stalled(self, why: str) -> None:
        """The worker is not reading: stop serving it."""
        self.overflowed = why
        self._serving.cancel()

    async def take(self) -> tuple[list[bytes], _Close | None]:
        """Everything queued, once there is something (the writer's wait), and the close
        frame that follows it, if one was queued."""
        while not self._frames and self._close is None:
            await self._writer.park()
        frames = list(self._frames)
        self._frames.clear()
        self._others = 0
        self._room.unpark_all()
        return frames, self._close

    def full(self) -> bool:
        """True while :data:`MAX_UNANSWERED` answers are owed: the next frame waits to be read."""
        return self.results + self._others >= MAX_UNANSWERED

    async def wait_for_room(self) -> None:
        """Wait until fewer than :data:`MAX_UNANSWERED` answers are owed."""
        while self.full():
            await self._room.park()

    def result_done(self) -> None:
        """A result was answered (its answer is queued)."""
        self.results -= 1
        if self._room:  # the reader waits (rarely: trio's unpark costs even with none)
            self._room.unpark_all()

    async def close_overflowed(self, socket: Socket) -> None:
        """After a stall, try the 1008 close frame for a moment (the worker is not reading,
        so it may never leave)."""
        if self.overflowed:
            with trio.move_on_after(OVERFLOW_CLOSE_WAIT):
                await socket.close(1008, self.overflowed)

    def _queue_other(self, payload: bytes) -> None:
        """Queue a frame that is not a task, within :data:`MAX_OUTBOX`."""
        if self._others >= MAX_OUTBOX:
            self.stalled(f"over {MAX_OUTBOX} frames wait to be sent: the worker is not reading")
            return
        self._others += 1
        self._queue(payload)

    def _queue(self, payload: bytes) -> None:
        if self._close is not None:
            return  # closing: nothing after the close frame
        self._frames.append(payload)
        if len(self._frames) == 1:
            self._writer.unpark()


async def serve_connection(
    runtime: Runtime, socket: Socket, bound_worker_id: str | None = None
) -> None:
    """Serve one worker connection until it closes (either side); frames over the size limit
    are refused by the transport (1009) before they reach here."""
    await socket.accept()
    serving = trio.CancelScope()
    outbox = _Outbox(serving)
    connection = runtime.connect(
        outbox.send, outbox.close, bound_worker_id, outbox.send_ack, outbox.send_task
    )
    try:
        with serving:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_write, socket, outbox, nursery.cancel_scope)
                timeout_ms = runtime.sessions.timeout_ms
                nursery.start_soon(_register_in_time, connection, timeout_ms, outbox.close)
                await _read(socket, connection, outbox, nursery)
                nursery.cancel_scope.cancel()
    finally:
        connection.closed()  # first: the close frame below may be cancelled with the connection
        await outbox.close_overflowed(socket)


async def _read(
    socket: Socket, connection: Connection, outbox: _Outbox, nursery: trio.Nursery
) -> None:
    """Handle frames until the socket closes; results in tasks of their own, the rest in order.
    Reading pauses while :data:`MAX_UNANSWERED` answers are owed (results being handled, answers
    not yet sent): a worker that does not read its answers is not read either."""
    errors_in_row = 0
    while True:
        if outbox.full():  # rarely: a coroutine per frame just to check cost more than the check
            await outbox.wait_for_room()
        try:
            frame = await socket.receive()
        except SocketClosed:
            return
        outbox.sent_error = False
        message = _decode(frame, outbox.send)
        if isinstance(message, _RESULTS):
            outbox.results += 1
            if not connection.report_soon(message, outbox.result_done):  # the usual case
                nursery.start_soon(_handle_result, connection, message, outbox)
        elif message is not None:
            await _handle(connection, message, outbox.send)
        errors_in_row = errors_in_row + 1 if outbox.sent_error else 0
        if errors_in_row >= MAX_PROTOCOL_ERRORS:
            outbox.close(1008, f"{MAX_PROTOCOL_ERRORS} protocol errors in a row")


_RESULTS = (wire.Complete, wire.Fail)  # a tuple: ``Complete | Fail`` is a new union each time


def _decode(frame: str | bytes, send: Any) -> wire.WorkerMessage | None:
    if isinstance(frame, bytes):
        binary = "binary frames are not accepted; send JSON text"
        send(wire.ErrorMessage(code="INVALID_MESSAGE", message=binary))
        return None
    try:
        return wire.decode_worker_message(frame)
    except wire.WireError as exc:
        send(wire.ErrorMessage(code=exc.code, message=exc.message, ref=exc.ref))
        return None


async def _register_in_time(connection: Connection, timeout_ms: int, close: Any) -> None:
    """A connection that does not register within the session timeout is closed (1008): an
    idle socket must not hold server resources forever."""
    await trio.sleep(timeout_ms / 1000)
    if connection.session is None and not connection.ever_registered:
        close(1008, "no register within the session timeout")


async def _handle(connection: Connection, message: wire.WorkerMessage, send: Any) -> None:
    """Handle one message; a refusal the session layer raises (the store failing, say) is an
    error frame, never a dropped connection."""
    try:
        await connection.handle(message)
    except OrbitError as exc:
        if exc.status >= 500:
            log.error("worker message %s failed: %s %s", message.type, exc.code, exc.message)
        send(wire.ErrorMessage(code=exc.code, message=exc.message, ref=message.id))


async def _handle_result(
    connection: Connection, message: wire.Complete | wire.Fail, outbox: _Outbox
) -> None:
    try:
        await _handle(connection, message, connection.send)
    finally:
        outbox.result_done()


async def _write(socket: Socket, outbox: _Outbox, scope: trio.CancelScope) -> None:
    """Send what is queued, everything at hand in one write (in pieces of :data:`WRITE_PIECE`
    frames); a piece that takes over :data:`WRITE_STALL` seconds means the worker is not
    reading. One stall scope serves every write: armed for a piece, disarmed while waiting
    (entering a cancel scope per write cost more than the write's own Python)."""
    stall = trio.CancelScope()
    try:
        with stall:
            while True:
                payloads, close = await outbox.take()
                if payloads:
                    for start in range(0, len(payloads), WRITE_PIECE):
                        stall.deadline = trio.current_time() + WRITE_STALL  # moved on progress
                        await socket.send_utf8(*payloads[start : start + WRITE_PIECE])
                    stall.deadline = math.inf  # waiting for frames is no stall
                if close is not None:
                    await socket.close(close.code, close.reason)
                    return
        if stall.cancelled_caught:
            outbox.stalled(f"no write progressed in {WRITE_STALL:g} s: the worker is not reading")
    except SocketClosed:
        pass
    finally:
        scope.cancel()
