"""The client side of an open WebSocket on trio, over Orbit's own framing (:mod:`.frames`): text
messages, and the few rules RFC 6455 gives a client. :mod:`.client_open` opens one.

What it promises:

- **Messages.** :meth:`ClientWebSocket.receive` gives whole text messages: fragments are joined,
  pings answered with pongs. Frames sent are masked with a fresh key each.
- **Closing.** Every way the socket ends raises :class:`WebSocketClosedError` from then on,
  carrying the close code and reason: the server's close frame (answered with the same code),
  :meth:`ClientWebSocket.aclose` (our code), 1006 when the connection ended without a close
  frame (mid-frame too), 1009 for a message over ``max_message_bytes`` (refused from its
  frame header), 1003 for a binary message, and the code RFC 6455 names for any other rule the
  server broke.
- **Concurrency.** One task receives while any number send. Sends that arrive while a write is
  under way leave together in the next write, each sender returning once its frame is written.
  :meth:`ClientWebSocket.send_nowait` queues a message without waiting: it leaves with the next
  write, at the latest the one the receiving task makes before it next reads, so what the
  receiving task answers to the messages of one read leaves in one write. With
  :meth:`ClientWebSocket.flush_queued` running in a task of its own, the receiving task writes
  only what the socket takes at once and reads on; that task waits for room for the rest.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import trio

from . import frames
from .direct_stream import DirectStream
from .frames import CLOSE, PONG, TEXT, Close, FrameReader, MaskKeys, Ping, ProtocolViolation

READ_CHUNK = 65536
LOST = 1006
"""The close code reported when the connection ended without a close frame."""
_STREAM_GONE = (trio.BrokenResourceError, trio.ClosedResourceError)


@dataclass(frozen=True)
class CloseReason:
    """Why a WebSocket closed: the code and reason of the first close sent or received, or
    :data:`LOST` when the connection ended without one."""

    code: int
    reason: str


class WebSocketClosedError(Exception):
    """The WebSocket is closed: nothing more can be sent or received (``code``, ``reason``)."""

    def __init__(self, why: CloseReason) -> None:
        super().__init__(f"closed ({why.code} {why.reason})".replace(" )", ")"))
        self.code = why.code
        self.reason = why.reason


class _Batch:
    """Frames that leave in one write, and whether they left."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.failed = False


class ClientWebSocket:
    """The client side of one open WebSocket (see the module's promises). Made by
    :func:`connect_websocket`; :meth:`aclose` ends it."""

    def __init__(
        self, stream: trio.abc.Stream, reader: FrameReader, subprotocol: str | None,
        close_timeout: float,
    ) -> None:  # fmt: skip
        self._stream = stream
        # plain TCP: no trio wrapper per read or write
        self._direct = DirectStream.of(stream, checks_cancel=False)
        self._reader = reader
        self.subprotocol = subprotocol
        """The subprotocol the server picked, or None."""
        self._close_timeout = close_timeout
        self._keys = MaskKeys()
        self._closed: CloseReason | None = None
        self._close_sent = False
        self._peer_done = trio.Event()  # the peer's close frame came, or its stream ended
        self._receiving = False
        self._stream_closed = False
        self._pending: list[bytes] = []
        self._batch = _Batch()  # the frames in _pending
        self._writing = False
        self._flushing = False  # a task of its own writes what send_nowait queued
        self._queued = trio.lowlevel.ParkingLot()  # that task, waiting for something queued

    @property
    def close_reason(self) -> CloseReason | None:
        """Why the socket closed, or None while it is open."""
        return self._closed

    async def send(self, message: str) -> None:
        """Send one text message; :class:`WebSocketClosedError` once closed (or closing). A
        send cancelled while its frame waits for another sender's write still goes out."""
        if self._close_sent or self._closed is not None:
            raise self._error()
        payload = message.encode("utf-8")
        await self._write(frames.encode_masked_frame(TEXT, payload, self._keys.next()))

    def send_nowait(self, message: str) -> None:
        """Queue one text message to leave with the next write (see the module's promises);
        :class:`WebSocketClosedError` once closed (or closing)."""
        if self._close_sent or self._closed is not None:
            raise self._error()
        payload = message.encode("utf-8")
        self._pending.append(frames.encode_masked_frame(TEXT, payload, self._keys.next()))

    async def flush_queued(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Write what :meth:`send_nowait` queued and the socket did not take at once, until the
        socket closes (for a task of its own, started with ``nursery.start``). The receiving
        task then never waits for the socket to take its answers: it writes what
        the socket takes at once and reads on while a full socket holds the rest (a peer that
        reads nothing until it has written would otherwise wait for it for ever)."""
        self._flushing = True
        task_status.started()
        try:
            while not self._stream_closed:
                if not self._pending or self._writing:
                    await self._queued.park()
                    continue
                with contextlib.suppress(WebSocketClosedError):
                    await self._write_pending()
        finally:
            self._flushing = False

    async def receive(self) -> str:
        """The next whole text message; :class:`WebSocketClosedError` once closed. One task at
        a time (another raises ``trio.BusyResourceError``)."""
        if self._receiving:
            raise trio.BusyResourceError("another task is already receiving on this WebSocket")
        self._receiving = True
        try:
            return await self._receive()
        finally:
            self._receiving = False

    async def aclose(self, code: int = 1000, reason: str = "") -> None:
        """Send a close frame with ``code`` and ``reason``, wait (up to ``close_timeout``) for
        the server's, then close the connection. Closing a closed socket does nothing."""
        try:
            if not self._close_sent:
                await self._send_close(code, reason)
            with trio.move_on_after(self._close_timeout):
                if self._receiving:  # the receiving task reads the server's close frame
                    await self._peer_done.wait()
                else:
                    self._receiving = True  # a receive() meanwhile is refused as busy
                    try:
                        await self._read_until_close()
                    finally:
                        self._receiving = False
        finally:
            await self._end_stream()

    # -- receiving -------------------------------------------------------------------------
    async def _receive(self) -> str:
        while not self._peer_done.is_set():
            try:
                found = self._reader.next()
            except ProtocolViolation as violation:
                await self._fail(violation.code, violation.reason)
                break
            if isinstance(found, str):
                return found
            if found is None:
                await self._feed()
            elif isinstance(found, bytes):
                await self._fail(1003, "binary messages are not accepted")
            elif isinstance(found, Ping):
                await self._pong(found)
            else:
                await self._on_close(found)
        raise self._error()

    async def _read_until_close(self) -> None:
        """After our close frame, with no task receiving: read until the server's."""
        while not self._peer_done.is_set():
            try:
                found = self._reader.next()
            except ProtocolViolation:
                return
            if found is None:
                await self._feed()
            elif isinstance(found, Close):
                self._peer_done.set()

    async def _feed(self) -> None:
        if self._pending and not self._writing:  # what send_nowait queued leaves first
            if self._flushing:
                self._flush_without_waiting()
            else:
                with contextlib.suppress(WebSocketClosedError):
                    await self._write_pending()
                if self._peer_done.is_set():
                    return  # the write found the connection broken
        data: bytes | bytearray
        try:
            if self._direct is not None:
                data = await self._direct.receive_some(READ_CHUNK)
            else:
                data = await self._stream.receive_some(READ_CHUNK)
        except _STREAM_GONE:
            data = b""
        if data:
            self._reader.feed(data)
            return
        self._closed = self._closed or CloseReason(LOST, "the connection ended without a close")
        self._peer_done.set()

    def _flush_without_waiting(self) -> None:
        """The receiving task's write of what was queued: what the socket takes at once (one
        write, no task switch); the rest, if any, is left to :meth:`flush_queued`'s task, and
        this one reads on."""
        if self._direct is not None:
            rest = self._write_now(self._direct, self._joined())
            if not rest:
                return
            self._pending.append(rest)
        self._queued.unpark()

    async def _pong(self, ping: Ping) -> None:
        if not self._close_sent:
            with contextlib.suppress(WebSocketClosedError):
                await self._write(frames.encode_masked_frame(PONG, ping.payload, self._keys.next()))

    async def _on_close(self, close: Close) -> None:
        """The server's close frame: answered with its code (an empty one with an empty one),
        then the connection is closed."""
        self._peer_done.set()
        self._closed = self._closed or CloseReason(close.code, close.reason)
        if self._close_sent:
            return  # the answer to ours: aclose() ends the stream
        self._close_sent = True
        payload = (
            b"" if close.code == frames.NO_CODE else frames.close_payload(close.code, close.reason)
        )
        with contextlib.suppress(WebSocketClosedError):
            await self._write(frames.encode_masked_frame(CLOSE, payload, self._keys.next()))
        await self._end_stream()

    async def _fail(self, code: int, reason: str) -> None:
        """The server broke a rule: close with ``code`` at once (what follows is not read)."""
        self._peer_done.set()
        if not self._close_sent:
            await self._send_close(code, reason)
        await self._end_stream()

    # -- sending ---------------------------------------------------------------------------
    async def _send_close(self, code: int, reason: str) -> None:
        self._close_sent = True
        self._closed = self._closed or CloseReason(code, reason)
        self._reader.discard_messages()
        payload = frames.close_payload(code, reason)
        with contextlib.suppress(WebSocketClosedError):
            await self._write(frames.encode_masked_frame(CLOSE, payload, self._keys.next()))

    async def _write(self, frame: bytes) -> None:
        """Write ``frame``, with whatever other frames are queued while a write is under way.
        On a plain socket with no write under way, what the socket takes at once is written
        right here (a checkpoint only for cancellation); the rest, if any, waits as usual."""
        if self._stream_closed:
            raise self._error()
        if self._direct is not None and not self._writing:
            await trio.lowlevel.checkpoint_if_cancelled()
        self._pending.append(frame)
        await self._write_pending()

    async def _write_pending(self) -> None:
        """Write the queued frames, with whatever is queued while the write is under way (or
        wait for the write under way to take them)."""
        batch = self._batch
        if self._direct is not None and not self._writing:
            rest = self._write_now(self._direct, self._joined())
            if not rest:
                return
            self._pending.append(rest)
        if self._writing:
            await batch.done.wait()
            if batch.failed:
                raise self._error()
            return
        self._writing = True
        try:
            while self._pending:
                await self._write_batch()
        finally:
            self._writing = False
        if batch.failed:
            raise self._error()

    @staticmethod
    def _write_now(direct: DirectStream, frame: bytes) -> bytes:
        """What of ``frame`` the socket did not take at once (all of it when the socket broke:
        the usual path meets the break again, and reports it)."""
        try:
            return frame[direct.send_now(frame) :]
        except _STREAM_GONE:
            return frame

    def _joined(self) -> bytes:
        """The queued frames, taken out of the queue."""
        data = b"".join(self._pending) if len(self._pending) > 1 else self._pending[0]
        self._pending.clear()
        return data

    async def _write_batch(self) -> None:
        data = self._joined()
        batch, self._batch = self._batch, _Batch()
        try:
            if self._direct is not None:
                await self._direct.send_all(data)
            else:
                await self._stream.send_all(data)
        except BaseException as exc:  # broken, or cancelled mid-write: the stream is unusable
            self._closed = self._closed or CloseReason(LOST, "the connection broke while sending")
            self._stream_closed = True
            self._peer_done.set()
            for failed in (batch, self._batch):
                failed.failed = True
                failed.done.set()
            self._pending.clear()
            if isinstance(exc, _STREAM_GONE):
                return
            await trio.aclose_forcefully(self._stream)
            raise
        finally:
            batch.done.set()

    async def _end_stream(self) -> None:
        if self._stream_closed:
            return
        self._stream_closed = True
        self._peer_done.set()
        self._closed = self._closed or CloseReason(LOST, "the connection was closed")
        with trio.move_on_after(self._close_timeout) as waited:
            with contextlib.suppress(*_STREAM_GONE, OSError):
                await self._stream.aclose()
        if waited.cancelled_caught:
            await trio.aclose_forcefully(self._stream)

    def _error(self) -> WebSocketClosedError:
        return WebSocketClosedError(self._closed or CloseReason(LOST, "the socket is closing"))
