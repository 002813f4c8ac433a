"""The server side of a WebSocket over an upgraded HTTP/1.1 stream: :mod:`.frames` does the
framing, this class does the I/O on trio. Fragments are joined into whole messages, pings are
answered, a message over the size limit closes the socket with 1009 (refused from its frame
header, before its payload is read), any other broken framing rule closes it with the code
RFC 6455 names, and a close from the peer is answered before :class:`SocketClosed` is raised.
A message in more than ``max_fragments`` frames closes it with 1009 too, and a write that makes
no progress for ``write_timeout`` (a peer that stopped reading) ends the connection at once
(:class:`~.streams.Deadline`)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import trio

from . import frames
from .frames import CLOSE, Close, FrameReader, Ping, ProtocolViolation
from .http1 import Request
from .streams import Deadline, SendLock, receive_or_end

if TYPE_CHECKING:
    from .application import Limits

READ_CHUNK = 65536
CLOSE_WAIT = 2.0
"""Seconds to wait for the client's close frame after the server sent its own."""


class SocketClosed(Exception):
    """The WebSocket is closed (by either side); nothing more can be received or sent."""


class WebSocket:
    """The server side of one WebSocket connection over an upgraded HTTP/1.1 stream.

    Constructing it checks the handshake (raising :class:`~.http1.Refusal`). One task may
    receive while another sends: sends are serialized by a lock, and a ping or a close from the
    peer is answered by the receiving task under the same lock.
    """

    def __init__(self, out: Deadline, request: Request, leftover: bytes, limits: Limits) -> None:
        self._stream = out.stream
        self._out = out
        self._handshake = frames.accept_handshake(request.headers)
        self._reader = FrameReader(limits.max_message_bytes, limits.max_fragments)
        self._reader.feed(leftover)
        self._send_lock = SendLock()
        self._closed = False  # a close frame was sent, or the stream is gone
        self._peer_done = False  # the client's close frame or end of stream was received
        self.accepted = False

    async def accept(self) -> None:
        """Complete the handshake (101 Switching Protocols)."""
        await self._send_raw(self._handshake)
        self.accepted = True

    async def receive(self) -> str | bytes:
        """The next whole message; raises :class:`SocketClosed` once the socket is closed."""
        while True:
            try:
                found = self._reader.next()
            except ProtocolViolation as violation:
                await self.close(violation.code, violation.reason)
                raise SocketClosed from None
            if isinstance(found, str | bytes):
                return found
            if found is None:
                await self._feed()
            elif isinstance(found, Ping):
                await self._send_raw(frames.encode_frame(frames.PONG, found.payload))
            else:
                await self._answer_close(found)
                raise SocketClosed

    async def send_utf8(self, *payloads: bytes) -> None:
        """Send text messages given as their UTF-8 bytes, in order, in one write; raises
        :class:`SocketClosed` once the socket is closed."""
        if self._closed:
            raise SocketClosed
        await self._send_raw(frames.encode_texts(payloads))

    async def close(self, code: int, reason: str = "") -> None:
        """Send a close frame (once); the transport closes the stream when the handler ends."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(SocketClosed):
            await self._send_raw(frames.encode_close(code, reason))

    async def finish(self) -> None:
        """After the server's close frame: read (and drop) what the client still sends until
        its close frame, end of stream or :data:`CLOSE_WAIT`. Closing a socket with unread
        bytes makes the kernel reset the connection, and the client could lose the close
        frame before reading it."""
        if not self._closed or self._peer_done:
            return
        self._reader.discard_messages()
        with trio.move_on_after(CLOSE_WAIT):
            while not isinstance(self._next_quietly(), Close):
                data = await receive_or_end(self._stream, READ_CHUNK)
                if not data:
                    return
                self._reader.feed(data)

    def _next_quietly(self) -> str | bytes | Ping | Close | None:
        try:
            return self._reader.next()
        except ProtocolViolation:
            return Close(1002, "")

    async def _feed(self) -> None:
        data = await receive_or_end(self._stream, READ_CHUNK)
        if not data:
            self._closed = self._peer_done = True
            raise SocketClosed
        self._reader.feed(data)

    async def _answer_close(self, close: Close) -> None:
        """Echo the peer's close code, as RFC 6455 section 5.5.1 suggests (an empty close
        frame is answered with an empty one)."""
        self._peer_done = True
        if self._closed:
            return
        self._closed = True
        echo = (
            frames.encode_frame(CLOSE, b"")
            if close.code == frames.NO_CODE
            else frames.encode_close(close.code, close.reason)
        )
        with contextlib.suppress(SocketClosed):
            await self._send_raw(echo)

    async def _send_raw(self, data: bytes) -> None:
        try:
            async with self._send_lock:
                await self._out.send(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._closed = True
            raise SocketClosed from None
