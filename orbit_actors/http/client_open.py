"""Opening a WebSocket to a ``ws://`` or ``wss://`` URL: a TCP (or TLS) connection, the upgrade
request and its answer checked (:mod:`.client_handshake`), then a :class:`~.client_socket.
ClientWebSocket` over it.

A refusal, a wrong accept key, a TLS failure, a connection that ends during the handshake or no
socket within ``connect_timeout`` is a :class:`~.client_handshake.HandshakeError`; a failure to
reach the server at all is the ``OSError`` trio raised.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TypedDict, Unpack
from urllib.parse import urlsplit

import trio

from .client_handshake import MAX_ANSWER_HEAD, Answer, ClientHandshake, HandshakeError, parse_answer
from .client_socket import READ_CHUNK, ClientWebSocket
from .frames import FrameReader

DEFAULT_MAX_MESSAGE = 1024 * 1024
_STREAM_GONE = (trio.BrokenResourceError, trio.ClosedResourceError)


@dataclass(frozen=True)
class _Target:
    secure: bool
    host: str
    port: int
    resource: str  # path and query

    @classmethod
    def parse(cls, url: str) -> _Target:
        parts = urlsplit(url)
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise ValueError(f"not a ws:// or wss:// URL: {url!r}")
        secure = parts.scheme == "wss"
        port = parts.port or (443 if secure else 80)
        resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return cls(secure, parts.hostname, port, resource)

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == (443 if self.secure else 80) else f"{host}:{self.port}"


async def connect_websocket(
    url: str,
    *,
    ssl_context: ssl.SSLContext | None = None,
    headers: Sequence[tuple[str, str]] = (),
    subprotocols: Sequence[str] = (),
    max_message_bytes: int = DEFAULT_MAX_MESSAGE,
    max_fragments: int = 1024,
    connect_timeout: float = 10.0,
    close_timeout: float = 5.0,
) -> ClientWebSocket:
    """Open a WebSocket to ``url`` (``wss://`` with ``ssl_context``, or the system's default
    one); the caller must :meth:`~ClientWebSocket.aclose` it. See the module's promises."""
    target = _Target.parse(url)
    handshake = ClientHandshake(target.host_header, target.resource, headers, subprotocols)
    try:
        with trio.fail_after(connect_timeout):
            stream = await _open_stream(target, ssl_context)
            try:
                subprotocol, leftover = await _shake_hands(stream, handshake)
            except BaseException:
                await trio.aclose_forcefully(stream)
                raise
    except trio.TooSlowError:
        raise HandshakeError(f"no WebSocket within {connect_timeout:g} s") from None
    reader = FrameReader(max_message_bytes, max_fragments, masked=False)
    reader.feed(leftover)
    return ClientWebSocket(stream, reader, subprotocol, close_timeout)


class Options(TypedDict, total=False):
    """The options of :func:`connect_websocket`, for :func:`open_websocket`."""

    ssl_context: ssl.SSLContext | None
    headers: Sequence[tuple[str, str]]
    subprotocols: Sequence[str]
    max_message_bytes: int
    max_fragments: int
    connect_timeout: float
    close_timeout: float


@contextlib.asynccontextmanager
async def open_websocket(url: str, **options: Unpack[Options]) -> AsyncIterator[ClientWebSocket]:
    """:func:`connect_websocket` (the same options) as a context manager: the socket is closed
    (1000) when the block ends."""
    socket = await connect_websocket(url, **options)
    try:
        yield socket
    finally:
        await socket.aclose()


async def _open_stream(target: _Target, context: ssl.SSLContext | None) -> trio.abc.Stream:
    if not target.secure:
        return await trio.open_tcp_stream(target.host, target.port)
    return await trio.open_ssl_over_tcp_stream(
        target.host, target.port, ssl_context=context or ssl.create_default_context()
    )


async def _shake_hands(
    stream: trio.abc.Stream, handshake: ClientHandshake
) -> tuple[str | None, bytes]:
    """Send the upgrade request; the subprotocol picked and the bytes after the answer."""
    try:
        await stream.send_all(handshake.request())
        answer, body, leftover = await _read_answer(stream)
    except _STREAM_GONE as exc:
        why = exc.__cause__ or exc
        raise HandshakeError(f"the connection ended during the handshake: {why}") from exc
    return handshake.check(answer, body), leftover


async def _read_answer(stream: trio.abc.Stream) -> tuple[Answer, bytes, bytes]:
    """The answer head, its body (for a refusal, by its Content-Length, at most
    :data:`MAX_ANSWER_HEAD` bytes) and the bytes after a 101's head."""
    buffer = bytearray()
    while (end := buffer.find(b"\r\n\r\n")) < 0:
        if len(buffer) > MAX_ANSWER_HEAD:
            raise HandshakeError("the server's answer head is over 64 KiB")
        data = await stream.receive_some(READ_CHUNK)
        if not data:
            raise HandshakeError("the server closed the connection instead of answering")
        buffer += data
    answer = parse_answer(bytes(buffer[:end]))
    rest = bytes(buffer[end + 4 :])
    if answer.status == 101:
        return answer, b"", rest
    declared = answer.header("content-length") or "0"
    length = min(int(declared) if declared.isdigit() else 0, MAX_ANSWER_HEAD)
    while len(rest) < length:
        data = await stream.receive_some(READ_CHUNK)
        if not data:
            break
        rest += data
    return answer, rest[:length], b""
