"""A plain TCP connection's socket read and written directly, for :mod:`.client_socket`: a read
or a write that the socket can take at once is one system call, with no trip through trio's
scheduler; only one that would block waits (``wait_readable``, ``wait_writable``).

Why: trio's ``SocketStream`` yields to the scheduler after every successful ``recv`` and
``send`` (and wraps each in a conflict detector and an error translator). A worker receiving a
task, sending its result and receiving the acknowledgement paid a scheduler pass for each, which
was about a third of its CPU per task when tasks come one at a time.

Since a read that finds data never yields, a reader that always finds data would keep every
other task waiting: after :data:`READS_BEFORE_A_CHECKPOINT` reads in a row that found data, the
next read first passes through the scheduler (a checkpoint, where it may also be cancelled).

What stays the same: a socket that broke is ``trio.BrokenResourceError``, one closed (by
another task, even while this one waits) ``trio.ClosedResourceError``, as ``SocketStream``
raises them; the stream still owns the socket and closes it. Only on POSIX, where ``read`` and
``write`` work on a socket; elsewhere (and over TLS) the stream is used as it is.
"""

from __future__ import annotations

import os

import trio

READS_BEFORE_A_CHECKPOINT = 16


class DirectSocket:
    """The socket of a plain :class:`trio.SocketStream`, used without its wrappers (see the
    module). The stream stays the owner: closing it ends this too."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self._socket = stream.socket
        self._reads = 0  # reads in a row that found data without waiting

    @classmethod
    def of(cls, stream: trio.abc.Stream) -> DirectSocket | None:
        """A direct view of ``stream``, or None when it is not a plain socket on POSIX."""
        if os.name == "posix" and isinstance(stream, trio.SocketStream):
            return cls(stream)
        return None

    def _fd(self) -> int:
        """The socket's descriptor; ``ClosedResourceError`` once the stream closed it (so that
        a descriptor number reused by another socket is never touched)."""
        fd = self._socket.fileno()
        if fd < 0:
            raise trio.ClosedResourceError("the socket was closed")
        return fd

    async def receive_some(self, max_bytes: int) -> bytes:
        """What the socket holds (up to ``max_bytes``), waiting only when it holds nothing;
        ``b""`` once the peer ended the connection."""
        if self._reads >= READS_BEFORE_A_CHECKPOINT:
            self._reads = 0
            await trio.lowlevel.checkpoint()
        while True:
            try:
                data = os.read(self._fd(), max_bytes)
            except BlockingIOError:
                self._reads = 0
                await trio.lowlevel.wait_readable(self._socket)
                continue
            except OSError as exc:
                raise trio.BrokenResourceError(f"the socket broke: {exc}") from exc
            self._reads += 1
            return data

    def send_now(self, data: bytes | memoryview) -> int:
        """Write what the socket takes at once; the number of bytes taken (0 when it would
        block)."""
        try:
            return os.write(self._fd(), data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise trio.BrokenResourceError(f"the socket broke: {exc}") from exc

    async def send_all(self, data: bytes) -> None:
        """Write all of ``data``, waiting whenever the socket is full."""
        view = memoryview(data)
        while view:
            sent = self.send_now(view)
            view = view[sent:]
            if view:
                await trio.lowlevel.wait_writable(self._socket)
