"""Small I/O helpers on trio streams, shared by the HTTP/1.1, HTTP/2 and WebSocket code:
reading where a vanished peer is just the end, and closing a connection the client is still
sending on without losing the last answer."""

from __future__ import annotations

import trio

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
        if isinstance(stream, trio.SocketStream):
            await stream.send_eof()
        drained = 0
        while drained < LINGER_BYTES:
            data = await stream.receive_some(65536)
            if not data:
                return
            drained += len(data)


WRITE_PIECE = 65536
"""A write's progress is judged piece by piece: each piece must leave within the timeout."""


class WriteStalled(Exception):
    """A write made no progress within the write timeout: the client stopped reading. The
    stream is unusable afterwards (part of a piece may have left); close it."""


async def send_all_within(stream: trio.abc.Stream, data: bytes, timeout: float) -> None:
    """Send ``data``; raise :class:`WriteStalled` when a piece of :data:`WRITE_PIECE` bytes has
    not left within ``timeout`` seconds. A client reading slowly but steadily is served; one
    that stopped reading holds the connection for ``timeout``, not for ever."""
    view = memoryview(data)
    with trio.CancelScope() as scope:
        for start in range(0, len(view), WRITE_PIECE):
            scope.deadline = trio.current_time() + timeout  # pushed forward on progress
            await stream.send_all(view[start : start + WRITE_PIECE])
    if scope.cancelled_caught:
        raise WriteStalled
