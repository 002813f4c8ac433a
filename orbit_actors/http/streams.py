"""Small I/O helpers on trio streams, shared by the HTTP/1.1, HTTP/2 and WebSocket code:
reading where a vanished peer is just the end, and closing a connection the client is still
sending on without losing the last answer."""

from __future__ import annotations

import math
from types import TracebackType

import trio

from .direct_stream import DirectStream

LINGER_TIMEOUT = 2.0
"""How long the client's remaining bytes are read (and dropped) before the connection closes."""
LINGER_BYTES = 16 * 1024 * 1024
"""How many of them, at most."""


async def receive_or_end(stream: trio.abc.Stream, max_bytes: int = 65536) -> bytes | bytearray:
    """The next bytes from the peer; ``b""`` when it closed or the stream broke."""
    try:
        return await stream.receive_some(max_bytes)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return b""


async def linger(stream: trio.abc.Stream) -> None:
    """After the last answer: stop sending, then read what the client still sends until it
    closes, for at most :data:`LINGER_TIMEOUT` and :data:`LINGER_BYTES`. Closing a socket that
    holds unread bytes makes the kernel reset the connection, and the client could lose the
    answer before reading it."""
    with trio.move_on_after(LINGER_TIMEOUT):
        if isinstance(stream, trio.abc.HalfCloseableStream):
            await stream.send_eof()
        drained = 0
        while drained < LINGER_BYTES:
            data = await stream.receive_some(65536)
            if not data:
                return
            drained += len(data)


class SendLock:
    """A FIFO lock around one stream's writes that takes no checkpoint when it is free (the
    write under it checkpoints anyway). ``trio.StrictFIFOLock`` yields to the scheduler on
    every acquisition, free or not: a task switch for each frame sent to a worker. A task that
    waits is handed the lock by the one that releases it, in the order they came."""

    def __init__(self) -> None:
        self._held = False
        self._waiting = trio.lowlevel.ParkingLot()

    @property
    def held(self) -> bool:
        """A task holds the lock (a write is under way or handed over)."""
        return self._held

    async def __aenter__(self) -> None:
        if self._held:
            await self._waiting.park()  # woken holding it (handed over by __aexit__)
        else:
            self._held = True

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._waiting:
            self._waiting.unpark()  # the first waiter holds it now
        else:
            self._held = False


WRITE_PIECE = 65536
"""A write's progress is judged piece by piece: each piece must leave within the timeout."""


class Deadline:
    """The one deadline of a connection, on :attr:`scope`, which the transport wraps around the
    whole connection. It is set for what the connection waits for now (:meth:`expect`: the next
    request, the rest of a head, a body) and, during a write, for the write to make progress: a
    piece of :data:`WRITE_PIECE` bytes that has not left within ``write_timeout`` (a client that
    stopped reading) ends the connection. :attr:`phase` says which wait ran out.

    One scope for the connection's life with its deadline moved, rather than a scope per wait:
    entering a cancel scope cost more than reading or writing a small request. A plain
    HTTP/1.1 connection runs without it for as long as nothing needs a deadline
    (``Server._serve_plainly``), and enters it (:meth:`enter`) only then."""

    scope: trio.CancelScope
    """The connection's scope, made when it is entered (:meth:`enter`)."""

    def __init__(self, stream: trio.abc.Stream, write_timeout: float) -> None:
        self.stream = stream
        self.phase = "idle"
        self._write_timeout = write_timeout
        self._wait_by = math.inf
        self._entered = False

    def enter(self) -> trio.CancelScope:
        """The scope, to be entered now (``with out.enter():``; made only then: ~6,000
        instructions that a connection served without it does not pay)."""
        self._entered = True
        self.scope = trio.CancelScope()
        return self.scope

    def cancel(self) -> None:
        """End the connection's wait for its next request (the keep-alive timeout, a drain):
        its scope is cancelled; before it entered its scope, its socket is closed instead, and
        the wait raises ``ClosedResourceError`` (any read after it too: no race to lose)."""
        if self._entered:
            self.scope.cancel()
        else:
            assert isinstance(self.stream, DirectStream)  # only those run without their scope
            self.stream.close()

    def expect(self, phase: str, deadline: float) -> None:
        """What the connection waits for now (``idle``, ``head``, ``body``) and until when."""
        self.phase = phase
        if deadline != self._wait_by:
            self._wait_by = self.scope.deadline = deadline

    async def send(self, data: bytes, *, restore: bool = True) -> None:
        """Write ``data`` (writes are serialized by their callers); the wait's deadline is
        restored after it, or, with ``restore`` False, left to the caller's next
        :meth:`expect` (one deadline move fewer per answer), the write's own deadline and phase
        holding until then. On a socket read directly, a write it takes at once moves no
        deadline at all."""
        stream = self.stream
        if isinstance(stream, DirectStream) and len(data) <= WRITE_PIECE:
            await stream.checkpoint()
            sent = stream.send_now(data)
            if sent == len(data):
                return  # left at once: no deadline was needed
            data = data[sent:]
        phase, scope = self.phase, self.scope
        self.phase = "write"
        try:
            if len(data) <= WRITE_PIECE:
                scope.deadline = trio.current_time() + self._write_timeout
                await self.stream.send_all(data)
            else:
                view = memoryview(data)
                for start in range(0, len(view), WRITE_PIECE):
                    scope.deadline = trio.current_time() + self._write_timeout  # on progress
                    await self.stream.send_all(view[start : start + WRITE_PIECE])
        finally:
            if restore:
                self.phase = phase
                scope.deadline = self._wait_by
            else:
                self._wait_by = scope.deadline

    def stall(self) -> None:
        """End the connection as a stalled write does (a shut HTTP/2 window, say)."""
        self.phase = "write"
        self.scope.cancel()
