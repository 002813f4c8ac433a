"""The worker gateway: one WebSocket connection carried into a transport-free
:class:`~orbit_actors.actors.sessions.Connection`.

Frames are decoded into protocol messages; a frame that is not a valid message is answered with
an ``error`` frame and the connection stays, until ten protocol errors in a row close it (1008).
Results are handled concurrently (each is acknowledged once durable, so one slow commit does
not hold back the next result) while registration, heartbeats and credit stay in order.
Outgoing messages go through one writer task, so the session layer's ``send`` never blocks:
at most :data:`MAX_OUTBOX` frames wait for it. A worker that stops reading fills its socket,
then the outbox: when the outbox is full, or a write makes no progress for the transport's
write timeout, the connection is closed (1008 when the close frame can still be written) and
the session is lost as when a worker vanishes: its tasks become uncertain after the session
timeout unless it resumes.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from ..actors.sessions import Connection
from ..errors import OrbitError
from ..http.application import ServerSocket as Socket
from ..http.websocket import SocketClosed
from ..ir.jsontext import compact_json
from ..runtime import Runtime
from ..wire import messages as wire

log = logging.getLogger("orbit.gateway")

MAX_PROTOCOL_ERRORS = 10
MAX_RESULTS_IN_FLIGHT = 1024  # results of one connection handled at once; more wait to be read
MAX_OUTBOX = 1024  # frames waiting to be sent to one worker (http-api.md, "Connection limits")
OVERFLOW_CLOSE_WAIT = 2.0  # seconds to try the 1008 close frame on a worker that is not reading


class _Close:
    def __init__(self, code: int, reason: str) -> None:
        self.code = code
        self.reason = reason


class _Outbox:
    """Frames waiting for the writer task, at most :data:`MAX_OUTBOX`: one more means the
    worker stopped reading, and serving it ends (``serving`` is cancelled)."""

    def __init__(self, serving: trio.CancelScope) -> None:
        self._put, self.taken = trio.open_memory_channel[str | _Close](MAX_OUTBOX)
        self._serving = serving
        self.overflowed = False
        self.sent_error = False  # since the last frame received

    def send(self, message: wire.ServerMessage) -> None:
        """Queue ``message`` (the session layer's ``send``: it never blocks)."""
        if isinstance(message, wire.ErrorMessage):
            self.sent_error = True
        self._queue(compact_json(wire.encode(message)))

    def close(self, code: int, reason: str) -> None:
        """Queue the close frame: it leaves after what was queued before it."""
        self._queue(_Close(code, reason))

    async def close_overflowed(self, socket: Socket) -> None:
        """After an overflow, try the 1008 close frame for a moment (the worker is not reading,
        so it may never leave)."""
        if self.overflowed:
            with trio.move_on_after(OVERFLOW_CLOSE_WAIT):
                reason = f"over {MAX_OUTBOX} frames wait to be sent: the worker is not reading"
                await socket.close(1008, reason)

    def _queue(self, item: str | _Close) -> None:
        try:
            self._put.send_nowait(item)
        except trio.WouldBlock:
            self.overflowed = True
            self._serving.cancel()
        except trio.ClosedResourceError:
            pass  # closing already


async def serve_connection(
    runtime: Runtime, socket: Socket, bound_worker_id: str | None = None
) -> None:
    """Serve one worker connection until it closes (either side); frames over the size limit
    are refused by the transport (1009) before they reach here."""
    await socket.accept()
    serving = trio.CancelScope()
    outbox = _Outbox(serving)
    connection = runtime.connect(outbox.send, outbox.close, bound_worker_id)
    try:
        with serving:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_write, socket, outbox.taken, nursery.cancel_scope)
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
    """Handle frames until the socket closes; results in tasks of their own (at most
    :data:`MAX_RESULTS_IN_FLIGHT`), the rest in order."""
    results = trio.Semaphore(MAX_RESULTS_IN_FLIGHT)
    errors_in_row = 0
    while True:
        try:
            frame = await socket.receive()
        except SocketClosed:
            return
        outbox.sent_error = False
        message = _decode(frame, outbox.send)
        if isinstance(message, wire.Complete | wire.Fail):
            await results.acquire()
            nursery.start_soon(_handle_result, connection, message, results)
        elif message is not None:
            await _handle(connection, message, outbox.send)
        errors_in_row = errors_in_row + 1 if outbox.sent_error else 0
        if errors_in_row >= MAX_PROTOCOL_ERRORS:
            outbox.close(1008, f"{MAX_PROTOCOL_ERRORS} protocol errors in a row")


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
    connection: Connection, message: wire.Complete | wire.Fail, results: trio.Semaphore
) -> None:
    try:
        await _handle(connection, message, connection.send)
    finally:
        results.release()


async def _write(
    socket: Socket, outbox: trio.MemoryReceiveChannel[str | _Close], scope: trio.CancelScope
) -> None:
    try:
        async for item in outbox:
            batch: list[str] = []
            while not isinstance(item, _Close):
                batch.append(item)
                try:  # whatever else is already queued leaves in the same write
                    item = outbox.receive_nowait()
                except trio.WouldBlock:
                    break
            if batch:
                await socket.send(*batch)
            if isinstance(item, _Close):
                await socket.close(item.code, item.reason)
                return
    except SocketClosed:
        pass
    finally:
        scope.cancel()
