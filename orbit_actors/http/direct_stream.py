"""A plain TCP connection's socket read and written directly, on both sides: the server's
connections (:mod:`.transport`) and the worker's WebSocket (:mod:`.client_socket`). A read or a
write that the socket can take at once is one system call, with no trip through trio's
scheduler; only one that would block waits (``wait_readable``, ``wait_writable``).

Why: trio's ``SocketStream`` yields to the scheduler after every successful ``recv`` and
``send``, and wraps each in a conflict detector, an error translator and a context manager:
about 25,000 instructions a call, several calls per execution on each side.

What stays the same:

- **Cancellation.** On the server every read and write first raises ``trio.Cancelled`` when its
  scope is cancelled (``checkpoint_if_cancelled``), as trio's do: a deadline that passed ends
  the connection at its next read even if the client keeps sending. The worker's client makes
  its stream with ``checks_cancel=False``: it checks before a write itself, and a read that
  finds data goes without the check (a cancel reaches its reader at its next wait or fairness
  yield).
- **Fairness.** A read or write that does not wait does not yield either, so after
  :data:`CALLS_BEFORE_A_CHECKPOINT` of them in a row the next one passes through the scheduler
  first: a connection that always has data, or always room, still lets the others run.
- **Errors.** A socket that broke is ``trio.BrokenResourceError``, one closed (even while a
  task waits on it) ``trio.ClosedResourceError``, as ``SocketStream`` raises them. The
  ``SocketStream`` stays the socket's owner: :meth:`aclose` and :meth:`send_eof` are its own.

Only on POSIX, where ``read`` and ``write`` work on a socket; elsewhere, and over TLS, the
stream is used as it is (:meth:`DirectStream.over`, :meth:`DirectStream.of`). The server's
listening socket is accepted from the same way (:class:`DirectListener`), and a connection it
accepts is the standard library's socket read directly from the start: trio's socket and
``SocketStream`` around it (~15,000 instructions a connection) are built only for a half close
or an ``aclose``.
"""

from __future__ import annotations

import errno
import os
import socket
from typing import Any

import trio

CALLS_BEFORE_A_CHECKPOINT = 16
"""Reads and writes in a row that did not wait, after which the next one yields first."""
DEFAULT_RECEIVE_SIZE = 65536


class DirectStream(trio.abc.HalfCloseableStream):
    """A plain :class:`trio.SocketStream` used without its wrappers (see the module)."""

    def __init__(
        self, stream: trio.SocketStream | socket.socket, *, checks_cancel: bool = True
    ) -> None:
        self._stream: trio.SocketStream | None
        self.socket: trio.socket.SocketType | socket.socket
        if isinstance(stream, socket.socket):  # first: a miss on trio's ABCs costs ~1.5 K
            self._stream, self.socket = None, stream
        else:
            self._stream, self.socket = stream, stream.socket
        self.checks_cancel = checks_cancel
        """Whether every read and write first raises ``Cancelled`` in a cancelled scope."""
        self._unyielded = 0  # reads and writes in a row that did not yield

    @classmethod
    def accepted(cls, connection: socket.socket) -> DirectStream:
        """A connection just accepted, as the standard library's socket, set up as trio's
        ``SocketStream`` sets one up (non-blocking, ``TCP_NODELAY``, ``TCP_NOTSENT_LOWAT``)
        without trio's socket and stream objects around it: only :meth:`send_eof`,
        :meth:`aclose` and :meth:`wait_send_all_might_not_block` need them, and build them
        then (:attr:`stream`)."""
        connection.setblocking(False)
        try:
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
            if hasattr(socket, "TCP_NOTSENT_LOWAT"):
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT, 2**14)
        except OSError:
            pass  # as trio's: not every kind of socket has them
        return cls(connection)

    @property
    def stream(self) -> trio.SocketStream:
        """The socket as trio's ``SocketStream`` (the owner of its half close and close)."""
        if self._stream is None:
            assert isinstance(self.socket, socket.socket)
            self._stream = trio.SocketStream(trio.socket.from_stdlib_socket(self.socket))
        return self._stream

    @classmethod
    def of(cls, stream: trio.abc.Stream, *, checks_cancel: bool = True) -> DirectStream | None:
        """A direct view of ``stream``, or None when it is not a plain socket on POSIX."""
        if os.name == "posix" and isinstance(stream, trio.SocketStream):
            return cls(stream, checks_cancel=checks_cancel)
        return None

    @classmethod
    def over(cls, stream: trio.abc.Stream) -> trio.abc.Stream:
        """``stream`` read and written directly when it is a plain socket on POSIX, else as it
        is."""
        return cls.of(stream) or stream

    def _fd(self) -> int:
        """The socket's descriptor; ``ClosedResourceError`` once it was closed (so that a
        descriptor number reused by another socket is never touched)."""
        fd = self.socket.fileno()
        if fd < 0:
            raise trio.ClosedResourceError("the socket was closed")
        return fd

    async def checkpoint(self) -> None:
        """Raise if cancelled (with :attr:`checks_cancel`); yield once every
        :data:`CALLS_BEFORE_A_CHECKPOINT` calls."""
        if self._unyielded >= CALLS_BEFORE_A_CHECKPOINT:
            self._unyielded = 0
            await trio.lowlevel.checkpoint()
        elif self.checks_cancel:
            await trio.lowlevel.checkpoint_if_cancelled()
        self._unyielded += 1

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """What the socket holds (up to ``max_bytes``), waiting only when it holds nothing;
        ``b""`` once the peer ended the connection."""
        if max_bytes is None:
            max_bytes = DEFAULT_RECEIVE_SIZE
        elif max_bytes < 1:
            raise ValueError("max_bytes must be >= 1")
        await self.checkpoint()
        while True:
            try:
                return os.read(self._fd(), max_bytes)
            except BlockingIOError:
                self._unyielded = 0
                await trio.lowlevel.wait_readable(self.socket)
            except OSError as exc:
                raise trio.BrokenResourceError(f"the socket broke: {exc}") from exc

    def receive_now(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes | None:
        """What the socket holds (up to ``max_bytes``) without waiting or yielding: None when it
        holds nothing yet, ``b""`` once the peer ended the connection."""
        try:
            return os.read(self._fd(), max_bytes)
        except BlockingIOError:
            return None
        except OSError as exc:
            raise trio.BrokenResourceError(f"the socket broke: {exc}") from exc

    async def receive_when_readable(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes:
        """:meth:`receive_some` for a read that would almost surely find nothing yet (the next
        request of a keep-alive connection, just after its answer): it waits until the socket
        is readable before reading, sparing the read that fails (``BlockingIOError`` raised and
        caught, ~7,000 instructions). Data already there is read after one trip through the
        scheduler. The wait is a checkpoint: a cancelled scope raises there."""
        while True:
            self._unyielded = 0
            await trio.lowlevel.wait_readable(self.socket)
            try:
                return os.read(self._fd(), max_bytes)
            except BlockingIOError:
                continue
            except OSError as exc:
                raise trio.BrokenResourceError(f"the socket broke: {exc}") from exc

    def send_now(self, data: bytes | bytearray | memoryview) -> int:
        """Write what the socket takes at once, without waiting; the number of bytes taken (0
        when it is full)."""
        try:
            return os.write(self._fd(), data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise trio.BrokenResourceError(f"the socket broke: {exc}") from exc

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Write all of ``data``, waiting whenever the socket is full."""
        await self.checkpoint()
        view = memoryview(data)
        while True:
            view = view[self.send_now(view) :]
            if not view:
                return
            self._unyielded = 0
            await trio.lowlevel.wait_writable(self.socket)

    async def wait_send_all_might_not_block(self) -> None:
        """Wait until the socket has room."""
        await self.stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        """Stop sending (the peer reads the end of the stream); reading goes on."""
        await self.stream.send_eof()

    async def aclose(self) -> None:
        """Close the socket (the ``SocketStream``'s own close)."""
        await self.stream.aclose()

    def close(self, *, waited_on: bool = True) -> None:
        """Close the socket at once, what ``aclose`` does without its checkpoint (a task
        waiting on it is woken with ``ClosedResourceError``, as trio's close does).
        ``waited_on`` False: no task can be waiting on it (its connection's last one closes
        it), so trio is not told (~12,000 instructions; closing the descriptor takes it out of
        trio's epoll set, and trio keeps no entry for a descriptor nothing waits on)."""
        sock = self.socket
        if waited_on and isinstance(sock, socket.socket) and sock.fileno() >= 0:
            trio.lowlevel.notify_closing(sock)
        sock.close()


_IGNORED_ACCEPT_ERRNO_NAMES = (
    "EPERM", "ECONNABORTED", "EPROTO", "ENETDOWN", "ENOPROTOOPT", "EHOSTDOWN", "ENONET",
    "EHOSTUNREACH", "EOPNOTSUPP", "ENETUNREACH",
)  # fmt: skip
_IGNORED_ACCEPT_ERRORS = frozenset(
    getattr(errno, name) for name in _IGNORED_ACCEPT_ERRNO_NAMES if hasattr(errno, name)
)
"""A connection that went away before it was accepted (as ``trio.SocketListener`` skips)."""


class DirectListener(trio.abc.Listener[DirectStream]):
    """A plain :class:`trio.SocketListener` accepting directly: a connection already waiting is
    one ``accept`` call, with no trip through trio's scheduler (trio's yields after each, ~44,000
    instructions a connection with its wrappers). Accepting is cancellable at every call, and
    after :data:`CALLS_BEFORE_A_CHECKPOINT` connections in a row that did not wait the next one
    yields first (a flood of connections still lets the others run). Errors are the
    listener's: a connection gone before it was accepted is skipped, a closed listener is
    ``trio.ClosedResourceError``, any other ``OSError`` is raised (out of descriptors, say)."""

    def __init__(self, listener: trio.SocketListener) -> None:
        self.listener = listener
        trio_socket = listener.socket
        # A second descriptor of the same listening socket, for the standard library's accept.
        self._socket = socket.socket(
            trio_socket.family, trio_socket.type, fileno=os.dup(trio_socket.fileno())
        )
        self._socket.setblocking(False)
        # what a connection's socket is made of (the listener's, as plain numbers)
        self._kind = (int(self._socket.family), int(self._socket.type), self._socket.proto)
        self._unyielded = 0

    @classmethod
    def over(cls, listener: trio.abc.Listener[Any]) -> trio.abc.Listener[Any]:
        """``listener`` accepting directly when it is a plain socket listener on POSIX, else as
        it is."""
        if os.name == "posix" and isinstance(listener, trio.SocketListener):
            return cls(listener)
        return listener

    async def accept(self) -> DirectStream:
        """The next connection, waiting only when none is waiting; read and written directly
        (:meth:`DirectStream.accepted`)."""
        if self._unyielded >= CALLS_BEFORE_A_CHECKPOINT:
            self._unyielded = 0
            await trio.lowlevel.checkpoint()
        else:
            await trio.lowlevel.checkpoint_if_cancelled()
        self._unyielded += 1
        while True:
            if self._socket.fileno() < 0:
                raise trio.ClosedResourceError("the listener was closed")
            try:
                # socket.accept's own call: the descriptor, then the socket made from it without
                # accept's Python around it (two enum conversions, a timeout check; ~13,000
                # instructions of its ~25,000)
                fd, _ = self._socket._accept()  # type: ignore[attr-defined]
            except BlockingIOError:
                self._unyielded = 0
                await trio.lowlevel.wait_readable(self._socket)
                continue
            except OSError as exc:
                if exc.errno == errno.EBADF:
                    raise trio.ClosedResourceError("the listener was closed") from None
                if exc.errno in _IGNORED_ACCEPT_ERRORS:
                    continue
                raise
            return DirectStream.accepted(socket.socket(*self._kind, fileno=fd))

    async def aclose(self) -> None:
        """Close both descriptors of the listening socket."""
        if self._socket.fileno() >= 0:
            trio.lowlevel.notify_closing(self._socket)
            self._socket.close()
        await self.listener.aclose()
