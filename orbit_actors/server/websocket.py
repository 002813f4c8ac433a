"""The server side of a WebSocket over an upgraded HTTP/1.1 stream: wsproto frames the
messages, this class does the I/O on trio. Fragments are joined into whole messages, pings are
answered, a message over the size limit closes the socket with 1009, and a close from the peer
is answered before :class:`SocketClosed` is raised."""

from __future__ import annotations

import contextlib

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Message,
    Ping,
    TextMessage,
)

from .http1 import Request

READ_CHUNK = 65536


class SocketClosed(Exception):
    """The WebSocket is closed (by either side); nothing more can be received or sent."""


class WebSocket:
    """The server side of one WebSocket connection over an upgraded HTTP/1.1 stream.

    One task may receive while another sends: sends are serialized by a lock, and a ping or a
    close from the peer is answered by the receiving task under the same lock.
    """

    def __init__(
        self, stream: trio.abc.Stream, request: Request, leftover: bytes, max_message_bytes: int
    ) -> None:
        self._stream = stream
        self._ws = WSConnection(ConnectionType.SERVER)
        headers = [(name.encode("latin-1"), value.encode("latin-1"))
                   for name, value in request.headers.items()]  # fmt: skip
        self._ws.initiate_upgrade_connection(headers, request.path)
        self._leftover = leftover
        self._max = max_message_bytes
        self._send_lock = trio.StrictFIFOLock()
        self._closed = False
        self.accepted = False

    async def accept(self) -> None:
        """Complete the handshake (101 Switching Protocols)."""
        await self._send_raw(self._ws.send(AcceptConnection()))
        self.accepted = True
        if self._leftover:
            self._ws.receive_data(self._leftover)

    async def receive(self) -> str | bytes:
        """The next whole message; raises :class:`SocketClosed` once the socket is closed."""
        parts: list[str | bytes] = []
        size = 0
        while True:
            for event in self._ws.events():
                if isinstance(event, TextMessage | BytesMessage):
                    parts.append(event.data if isinstance(event.data, str) else bytes(event.data))
                    size += len(event.data)
                    if size > self._max:
                        await self.close(1009, "message over the size limit")
                        raise SocketClosed
                    if event.message_finished:
                        return _joined(parts)
                elif isinstance(event, Ping):
                    await self._send_raw(self._ws.send(event.response()))
                elif isinstance(event, CloseConnection):
                    await self._answer_close(event)
                    raise SocketClosed
            await self._feed()

    async def send(self, *messages: str) -> None:
        """Send text messages, in order, in one write; raises :class:`SocketClosed` once the
        socket is closed."""
        if self._closed:
            raise SocketClosed
        await self._send_raw(b"".join(self._ws.send(Message(data=data)) for data in messages))

    async def close(self, code: int, reason: str = "") -> None:
        """Send a close frame (once); the transport closes the stream when the handler ends."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(SocketClosed):
            await self._send_raw(self._ws.send(CloseConnection(code=code, reason=reason)))

    async def _feed(self) -> None:
        try:
            data = await self._stream.receive_some(READ_CHUNK)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        if not data:
            self._closed = True
            raise SocketClosed
        self._ws.receive_data(bytes(data))

    async def _answer_close(self, event: CloseConnection) -> None:
        if not self._closed:
            self._closed = True
            with contextlib.suppress(SocketClosed):
                await self._send_raw(self._ws.send(event.response()))

    async def _send_raw(self, data: bytes) -> None:
        try:
            async with self._send_lock:
                await self._stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._closed = True
            raise SocketClosed from None


def _joined(parts: list[str | bytes]) -> str | bytes:
    if len(parts) == 1:
        return parts[0]
    if isinstance(parts[0], str):
        return "".join(part for part in parts if isinstance(part, str))
    return b"".join(part for part in parts if isinstance(part, bytes))
