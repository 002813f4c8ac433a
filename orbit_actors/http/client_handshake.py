"""The client's side of the WebSocket opening handshake (RFC 6455 section 4.1), without I/O:
the upgrade request with a fresh ``Sec-WebSocket-Key``, and the server's answer checked.

An answer other than ``101`` with ``Upgrade: websocket``, ``Connection: upgrade`` and the
``Sec-WebSocket-Accept`` that matches the key, or one that picks a subprotocol the client did
not offer or an extension (none is ever offered), is a :class:`HandshakeError`.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from dataclasses import dataclass

from .frames import accept_key

MAX_ANSWER_HEAD = 64 * 1024
"""Bytes the server's answer head may take before the handshake is given up."""


class HandshakeError(Exception):
    """The server did not accept the WebSocket: ``status`` is its answer's status (``None`` when
    the answer was not HTTP at all) and ``body`` the start of its body, for the message."""

    def __init__(self, message: str, status: int | None = None, body: bytes = b"") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


@dataclass(frozen=True)
class Answer:
    """The server's answer head: status, reason phrase, lower-case headers in order."""

    status: int
    reason: str
    headers: list[tuple[str, str]]

    def header(self, name: str) -> str | None:
        """The values of header ``name`` (lower case) joined by commas, or None."""
        values = [value for key, value in self.headers if key == name]
        return ", ".join(values) if values else None


class ClientHandshake:
    """One opening handshake: :meth:`request` is sent, :meth:`check` reads the answer."""

    def __init__(
        self,
        host: str,
        target: str,
        headers: Sequence[tuple[str, str]] = (),
        subprotocols: Sequence[str] = (),
    ) -> None:
        self.key = base64.b64encode(os.urandom(16)).decode("ascii")
        self.subprotocols = tuple(subprotocols)
        lines = [
            f"GET {target} HTTP/1.1", f"Host: {host}", "Upgrade: websocket",
            "Connection: Upgrade", f"Sec-WebSocket-Key: {self.key}", "Sec-WebSocket-Version: 13",
        ]  # fmt: skip
        if self.subprotocols:
            lines.append(f"Sec-WebSocket-Protocol: {', '.join(self.subprotocols)}")
        lines += [f"{name}: {value}" for name, value in headers]
        if any(char in line for line in lines for char in "\r\n\0"):
            raise ValueError("a header name or value holds a line break")
        self._request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def request(self) -> bytes:
        """The upgrade request's bytes."""
        return self._request

    def check(self, answer: Answer, body: bytes = b"") -> str | None:
        """The subprotocol the server picked (None for none), or :class:`HandshakeError`."""
        if answer.status != 101:
            shown = body[:200].decode("utf-8", "replace").strip()
            why = f"the server answered {answer.status} {answer.reason}" + (
                f": {shown}" if shown else ""
            )
            raise HandshakeError(why, answer.status, body)
        if (answer.header("upgrade") or "").strip().lower() != "websocket":
            raise HandshakeError("the 101 answer lacks 'Upgrade: websocket'", 101)
        if "upgrade" not in _tokens(answer.header("connection") or ""):
            raise HandshakeError("the 101 answer lacks 'Connection: upgrade'", 101)
        if (answer.header("sec-websocket-accept") or "").strip() != accept_key(self.key):
            raise HandshakeError(
                "the 101 answer's Sec-WebSocket-Accept does not match the key", 101
            )
        if answer.header("sec-websocket-extensions"):
            raise HandshakeError("the server named an extension, and none was offered", 101)
        chosen = (answer.header("sec-websocket-protocol") or "").strip() or None
        if chosen is not None and chosen not in self.subprotocols:
            raise HandshakeError(f"the server picked subprotocol {chosen!r}, not offered", 101)
        return chosen


def parse_answer(head: bytes) -> Answer:
    """The answer head (without its closing blank line), or :class:`HandshakeError`."""
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    status, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or not status.isdigit() or len(status) != 3:
        raise HandshakeError(f"the server's answer is not HTTP: {lines[0][:80]!r}")
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise HandshakeError(f"a malformed header line in the server's answer: {line[:80]!r}")
        headers.append((name.lower(), value.strip()))
    return Answer(int(status), reason, headers)


def _tokens(value: str) -> set[str]:
    return {token.strip().lower() for token in value.split(",")}
