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


async def serve_connection(
    runtime: Runtime, socket: Socket, bound_worker_id: str | None = None
) -> None:
    """Serve one worker connection until it closes (either side); frames over the size limit
    are refused by the transport (1009) before they reach here."""
    await socket.accept()
    outbox_send, outbox_receive = trio.open_memory_channel[str | _Close](MAX_OUTBOX)
    errors_in_row = 0
    sent_error = False
    overflowed = False
    serving = trio.CancelScope()

    def queue(item: str | _Close) -> None:
        nonlocal overflowed
        try:
            outbox_send.send_nowait(item)
        except trio.WouldBlock:  # the writer is stuck: the worker stopped reading
            overflowed = True
            serving.cancel()
        except trio.ClosedResourceError:
            pass  # closing already

    def send(message: wire.ServerMessage) -> None:
        nonlocal sent_error
        if isinstance(message, wire.ErrorMessage):
            sent_error = True
        queue(compact_json(wire.encode(message)))

    def close(code: int, reason: str) -> None:
        queue(_Close(code, reason))

    connection = runtime.connect(send, close, bound_worker_id)
    results = trio.Semaphore(MAX_RESULTS_IN_FLIGHT)
    try:
        with serving:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_write, socket, outbox_receive, nursery.cancel_scope)
                timeout_ms = runtime.sessions.timeout_ms
                nursery.start_soon(_register_in_time, connection, timeout_ms, close)
                while True:
                    try:
                        frame = await socket.receive()
                    except SocketClosed:
                        nursery.cancel_scope.cancel()
                        return
                    sent_error = False
                    message = _decode(frame, send)
                    if isinstance(message, wire.Complete | wire.Fail):
                        await results.acquire()
                        nursery.start_soon(_handle_result, connection, message, results)
                    elif message is not None:
                        await _handle(connection, message, send)
                    errors_in_row = errors_in_row + 1 if sent_error else 0
                    if errors_in_row >= MAX_PROTOCOL_ERRORS:
                        close(1008, f"{MAX_PROTOCOL_ERRORS} protocol errors in a row")
    finally:
        if overflowed:
            with trio.move_on_after(OVERFLOW_CLOSE_WAIT):
                reason = f"over {MAX_OUTBOX} frames wait to be sent: the worker is not reading"
                await socket.close(1008, reason)
        connection.closed()


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
