"""RFC 6455 framing without I/O, for both ends: the server's opening handshake answer, frames
read into whole messages (masked ones from a client, unmasked ones from a server) and frames
written (unmasked by a server, masked by a client, see :func:`encode_masked_frame`).

Every rule a peer can break ends in :class:`ProtocolViolation` carrying the close code the
RFC names for it (1002 protocol error, 1007 invalid UTF-8, 1009 message too big). A frame whose
header announces a message over the limit is refused before its payload is buffered, so a
connection never holds more than one message's worth of bytes; a message in more fragments
than ``max_fragments`` is refused too (1009), so empty or one-byte fragments cannot grow memory
past the size limit. No extension is negotiated,
so the reserved bits must be clear.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import os
import struct
from dataclasses import dataclass

from .http1 import Refusal

CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
_DATA = (CONTINUATION, TEXT, BINARY)
_CONTROL = (CLOSE, PING, PONG)
_ACCEPT_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_MAX_CONTROL_PAYLOAD = 125
_FINAL_TEXT = 0x80 | TEXT  # FIN set, reserved bits clear
_KEYS_PER_DRAW = 1024
_TRANSLATE_FROM = 1024  # bytes; see unmask
NO_CODE = 1005
"""The close code reported for a close frame that carries none (RFC 6455 section 7.1.5)."""


class ProtocolViolation(Exception):
    """The peer broke the framing rules; the connection closes with ``code``."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


def accept_key(key: str) -> str:
    """The ``Sec-WebSocket-Accept`` value that answers the ``Sec-WebSocket-Key`` ``key``."""
    return base64.b64encode(hashlib.sha1(key.encode("ascii") + _ACCEPT_GUID).digest()).decode()


def accept_handshake(headers: dict[str, str]) -> bytes:
    """The 101 answer to an upgrade request with lower-case ``headers``; :class:`Refusal` 426
    for a version other than 13, 400 for anything else amiss."""
    if "upgrade" not in _tokens(headers.get("connection", "")):
        raise _bad_handshake("the Connection header must include 'upgrade'")
    if headers.get("sec-websocket-version", "").strip() != "13":
        raise Refusal(
            426, "only WebSocket version 13 is supported", (("sec-websocket-version", "13"),)
        )
    key = headers.get("sec-websocket-key", "").strip()
    try:
        valid = len(base64.b64decode(key, validate=True)) == 16
    except binascii.Error:
        valid = False
    if not valid:
        raise _bad_handshake("Sec-WebSocket-Key must be 16 bytes in base64")
    return (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept_key(key).encode("ascii") + b"\r\n\r\n"
    )


def _bad_handshake(why: str) -> Refusal:
    return Refusal(400, f"not a valid WebSocket handshake: {why}")


def _tokens(value: str) -> set[str]:
    return {token.strip().lower() for token in value.split(",")}


def _head(opcode: int, size: int, mask_bit: int, fin: bool = True) -> bytes:
    first = (0x80 if fin else 0) | opcode
    if size < 126:
        return bytes((first, mask_bit | size))
    if size < 65536:
        return bytes((first, mask_bit | 126)) + size.to_bytes(2, "big")
    return bytes((first, mask_bit | 127)) + size.to_bytes(8, "big")


def encode_frame(opcode: int, payload: bytes, *, fin: bool = True) -> bytes:
    """One unmasked frame, as a server sends it (final unless ``fin`` is False)."""
    return _head(opcode, len(payload), 0, fin) + payload


def encode_masked_frame(opcode: int, payload: bytes, key: bytes, *, fin: bool = True) -> bytes:
    """One frame masked with the 4-byte ``key``, as a client must send it (RFC 6455 section
    5.3: the key must be unpredictable, see :class:`MaskKeys`)."""
    return _head(opcode, len(payload), 0x80, fin) + key + unmask(payload, key)


def encode_text(message: str) -> bytes:
    """A text message in one frame."""
    return encode_frame(TEXT, message.encode("utf-8"))


def encode_texts(payloads: tuple[bytes, ...]) -> bytes:
    """Text messages, each given as its UTF-8 bytes, one frame each, in one buffer: what
    :func:`encode_text` gives each, joined (the worker's frames are mostly under 64 KiB, whose
    heads come from a table or one ``struct`` call, not from :func:`_head`)."""
    parts: list[bytes] = []
    add = parts.append
    for payload in payloads:
        size = len(payload)
        if size < 126:
            add(_SMALL_TEXT_HEADS[size])
        elif size < 65536:
            add(_TEXT_HEAD_16(_FINAL_TEXT, 126, size))
        else:
            add(_head(TEXT, size, 0))
        add(payload)
    return b"".join(parts)


_SMALL_TEXT_HEADS = [bytes((_FINAL_TEXT, size)) for size in range(126)]
_TEXT_HEAD_16 = struct.Struct("!BBH").pack


def encode_close(code: int, reason: str = "") -> bytes:
    """A close frame; the reason is cut to fit a control frame."""
    return encode_frame(CLOSE, close_payload(code, reason))


def close_payload(code: int, reason: str = "") -> bytes:
    """A close frame's payload: the code, then the reason cut to fit a control frame (at a
    character's boundary, so that it stays valid UTF-8)."""
    cut = reason.encode("utf-8")[: _MAX_CONTROL_PAYLOAD - 2].decode("utf-8", "ignore")
    return code.to_bytes(2, "big") + cut.encode("utf-8")


def unmask(payload: bytes | bytearray, mask: bytes | bytearray) -> bytes:
    """``payload`` XOR the repeated 4-byte ``mask``; masking and unmasking are the same
    operation. Never a loop per byte: below :data:`_TRANSLATE_FROM` bytes one big-integer XOR,
    above it one ``bytes.translate`` per key byte over every fourth byte, which is 1.5-2.5x
    cheaper there (``bench/ws_client.py`` measures both)."""
    size = len(payload)
    if not size:
        return b""
    if size < _TRANSLATE_FROM:
        # read little-endian, the key is the mask's number times 1 in each 4-byte group covering
        # the payload (no key bytes built and read back), and the result's bytes past the payload
        # are cut: -14% of a 163-byte result's masking against a key of bytes cut to size
        groups = (size + 3) >> 2
        key = int.from_bytes(mask, "little") * _ONE_PER_GROUP[groups]
        xored = int.from_bytes(payload, "little") ^ key
        return xored.to_bytes(groups << 2, "little")[:size]
    data = bytearray(payload)
    for lane in range(4):
        data[lane::4] = data[lane::4].translate(_xor_table(mask[lane]))
    return bytes(data)


_ONE_PER_GROUP = [
    int.from_bytes(b"\x01\x00\x00\x00" * n, "little") for n in range(_TRANSLATE_FROM // 4 + 1)
]
"""For ``n`` 4-byte groups, the number with a 1 at the bottom of each (read little-endian):
times a mask's number, the mask repeated ``n`` times. Enough groups for any payload below
:data:`_TRANSLATE_FROM`."""


@functools.cache
def _xor_table(key: int) -> bytes:
    """The 256-byte table mapping each byte to itself XOR ``key``."""
    return bytes(byte ^ key for byte in range(256))


class MaskKeys:
    """Unpredictable 4-byte masking keys from ``os.urandom``, drawn :data:`_KEYS_PER_DRAW` at a
    time (one system call per 1024 frames, not one per frame)."""

    def __init__(self) -> None:
        self._pool = b""
        self._at = 0

    def next(self) -> bytes:
        """A fresh key, never handed out before."""
        if self._at >= len(self._pool):
            self._pool, self._at = os.urandom(4 * _KEYS_PER_DRAW), 0
        at = self._at
        self._at = at + 4
        return self._pool[at : at + 4]


@dataclass(frozen=True, slots=True)
class Ping:
    """A ping from the peer, to be answered with a pong carrying the same payload."""

    payload: bytes


@dataclass(frozen=True, slots=True)
class Close:
    """The peer's close frame (``code`` is :data:`NO_CODE` when it carried none)."""

    code: int
    reason: str


class FrameReader:
    """The peer's bytes in, whole messages (``str`` for text, ``bytes`` for binary) and control
    frames (:class:`Ping`, :class:`Close`) out. Fragments are joined; pongs are dropped.

    A server reads a client's frames, which must be masked (``masked=True``, the default); a
    client reads a server's, which must not be (``masked=False``)."""

    def __init__(
        self, max_message_bytes: int, max_fragments: int = 1024, *, masked: bool = True
    ) -> None:
        self._masked = masked
        self._mask_bit = 0x80 if masked else 0
        self._buffer = bytearray()
        self._max = max_message_bytes
        self._max_fragments = max_fragments
        self._opcode: int | None = None  # of the fragmented message in progress
        self._parts: list[bytes] = []
        self._size = 0
        self._discarding = False
        self._skip = 0  # payload bytes of a discarded frame still to come

    def feed(self, data: bytes | bytearray) -> None:
        """Add bytes received from the peer."""
        if self._skip:
            dropped = min(self._skip, len(data))
            self._skip -= dropped
            data = data[dropped:]
        self._buffer += data

    def discard_messages(self) -> None:
        """From now on, drop data frames unread, whatever their size (after a close is sent,
        only the peer's close frame matters)."""
        self._discarding = True
        self._opcode, self._parts, self._size = None, [], 0

    def next(self) -> str | bytes | Ping | Close | None:
        """The next message or control frame, or None until more bytes are fed."""
        text = self._whole_text()
        if text is not None:
            return text
        while True:
            frame = self._frame()
            if frame is None:
                return None
            fin, opcode, payload = frame
            if opcode == PONG:
                continue
            if opcode == PING:
                return Ping(payload)
            if opcode == CLOSE:
                return _close_payload(payload)
            if self._discarding:
                continue
            message = self._assemble(fin, opcode, payload)
            if message is not None:
                return message

    def _whole_text(self) -> str | None:
        """The common case at a fraction of the general path's cost: the buffer starts with a
        whole, final text frame under 64 KiB, masked as it must be, with no fragmented message
        in progress. Anything else (or a rule broken) is None, left to the general path, which
        reads it or refuses it as before."""
        buffer = self._buffer
        if len(buffer) < 4 or buffer[0] != _FINAL_TEXT or self._opcode is not None:
            return None
        size = buffer[1] ^ self._mask_bit  # a mask bit other than required leaves size >= 128
        at = 2
        if size >= 126:
            if size != 126:
                return None
            size, at = (buffer[2] << 8) | buffer[3], 4
        if size > self._max or self._discarding:
            return None
        payload: bytes | bytearray
        if self._masked:
            end = at + 4 + size
            if len(buffer) < end:
                return None
            payload = unmask(buffer[at + 4 : end], buffer[at : at + 4])
        else:
            end = at + size
            if len(buffer) < end:
                return None
            payload = buffer[at:end]
        del buffer[:end]
        try:
            return payload.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolViolation(1007, "a text message that is not valid UTF-8") from None

    def _frame(self) -> tuple[bool, int, bytes] | None:
        buffer = self._buffer
        if len(buffer) < 2:
            return None
        first, second = buffer[0], buffer[1]
        fin, opcode, size, at = bool(first & 0x80), first & 0x0F, second & 0x7F, 2
        if first & 0x70:
            raise ProtocolViolation(1002, "reserved bits must be clear (no extension is in use)")
        if bool(second & 0x80) != self._masked:
            must = "must" if self._masked else "must not"
            raise ProtocolViolation(1002, f"frames from a {self._peer} {must} be masked")
        if size == 126:
            if len(buffer) < 4:
                return None
            size, at = int.from_bytes(buffer[2:4], "big"), 4
        elif size == 127:
            if len(buffer) < 10:
                return None
            size, at = int.from_bytes(buffer[2:10], "big"), 10
            if size >> 63:
                raise ProtocolViolation(1002, "the top bit of a 64-bit frame length must be 0")
        self._check_header(fin, opcode, size)
        key_size = 4 if self._masked else 0
        end = at + key_size + size
        if len(buffer) < end:
            if self._discarding and opcode in _DATA:
                self._skip = end - len(buffer)
                buffer.clear()
            return None
        if key_size:
            payload = unmask(bytes(buffer[at + 4 : end]), bytes(buffer[at : at + 4]))
        else:
            payload = bytes(buffer[at:end])
        del buffer[:end]
        return fin, opcode, payload

    @property
    def _peer(self) -> str:
        return "client" if self._masked else "server"

    def _check_header(self, fin: bool, opcode: int, size: int) -> None:
        if opcode in _CONTROL:
            if not fin or size > _MAX_CONTROL_PAYLOAD:
                raise ProtocolViolation(1002, "control frames must be whole and at most 125 bytes")
        elif opcode not in _DATA:
            raise ProtocolViolation(1002, f"unknown opcode {opcode:#x}")
        elif self._size + size > self._max and not self._discarding:
            raise ProtocolViolation(1009, "message over the size limit")

    def _assemble(self, fin: bool, opcode: int, payload: bytes) -> str | bytes | None:
        if opcode == CONTINUATION:
            if self._opcode is None:
                raise ProtocolViolation(1002, "a continuation frame without a message to continue")
            opcode = self._opcode
        elif self._opcode is not None:
            raise ProtocolViolation(1002, "a new message began before the last one ended")
        if not fin:
            if len(self._parts) + 1 >= self._max_fragments:  # this one and the final one
                why = f"a message in more than {self._max_fragments} fragments"
                raise ProtocolViolation(1009, why)
            self._opcode = opcode
            self._parts.append(payload)
            self._size += len(payload)
            return None
        if self._parts:
            self._parts.append(payload)
            payload = b"".join(self._parts)
            self._opcode, self._parts, self._size = None, [], 0
        if opcode == BINARY:
            return payload
        try:
            return payload.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolViolation(1007, "a text message that is not valid UTF-8") from None


def _close_payload(payload: bytes) -> Close:
    """A peer's close frame, checked as RFC 6455 section 7.4 says."""
    if not payload:
        return Close(NO_CODE, "")
    if len(payload) == 1:
        raise ProtocolViolation(1002, "a close frame with a one-byte payload")
    code = int.from_bytes(payload[:2], "big")
    allowed = (1000 <= code <= 1014 and code not in (1004, 1005, 1006)) or 3000 <= code <= 4999
    if not allowed:
        raise ProtocolViolation(1002, f"close code {code} may not be sent")
    try:
        return Close(code, payload[2:].decode("utf-8"))
    except UnicodeDecodeError:
        raise ProtocolViolation(1007, "a close reason that is not valid UTF-8") from None
