"""HTTP/1.1 without I/O: requests parsed from bytes, answers encoded to bytes.

Parsing is httptools (bindings to llhttp, Node's parser): strict, and about ten times cheaper
per request than a pure-Python parser, which matters because every execution costs two
requests. :class:`RequestReader` adds the limits (a head over :data:`MAX_HEAD_BYTES` is 431, a
body over the limit 413, before it is read when ``Content-Length`` says so) and keeps the
requests of a pipelining client in order (a request that arrived whole is answered even when
garbage follows it in the same read), and requires one ``Host`` header in HTTP/1.1 (RFC 9112
section 3.2: 400 without it or with two). The transport (:mod:`.transport`) does the I/O.

Most requests are plain: a whole head and body in one read, no repeated header, nothing that
changes how the body is framed or the connection goes on. Those are read by
:func:`simple_request` (two regular expressions: ~38,000 instructions with the request built,
against ~45,000 through httptools' callbacks into Python), and a connection whose requests are
all plain never makes httptools' parser (~12,000 more). Anything else, from the first request
that is not plain on, goes to httptools, which decides and words every refusal.
``tests/http/test_simple_request.py`` checks both give the same requests.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import parse_qsl, unquote

import httptools

MAX_HEAD_BYTES = 64 * 1024


@dataclass
class Request:
    """One HTTP request: its path decoded, its query as a dict (the first of repeated keys),
    header names in lower case (repeated headers joined with ``, ``)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""
    keep_alive: bool = True  # the client lets the connection carry another request

    @property
    def content_type(self) -> str:
        """The ``Content-Type`` header, or ``""``."""
        return self.headers.get("content-type", "")


@dataclass
class Response:
    """One HTTP answer; ``close`` ends the connection after it."""

    status: int
    body: bytes = b""
    content_type: str = "application/json"
    close: bool = False
    headers: list[tuple[str, str]] = field(default_factory=list)


class Refusal(Exception):
    """What was received cannot be taken: answer ``status`` with ``message``, then close."""

    def __init__(
        self, status: int, message: str, headers: tuple[tuple[str, str], ...] = ()
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


def request_of(
    method: str, target: str, headers: dict[str, str] | list[tuple[str, str]], body: bytes
) -> Request:
    """A request from its method, target (path and query, as sent), headers (names in lower
    case; a list's repeated names are joined with ``, ``) and body."""
    if isinstance(headers, list):
        joined: dict[str, str] = {}
        for name, value in headers:
            known = joined.get(name)
            joined[name] = value if known is None else f"{known}, {value}"
        headers = joined
    raw_path, _, query = target.partition("?")
    return Request(
        method=method, path=unquote(raw_path), query=query_of(query), headers=headers, body=body
    )


def query_of(query: str) -> dict[str, str]:
    """A query string as a dict, the first of repeated keys kept, blank values kept. One with
    nothing to decode (no ``%``, no ``+``: ``wait=60``) is split directly, which is what
    ``parse_qsl`` does with it at a fraction of the cost."""
    if not query:
        return {}
    if "%" in query or "+" in query:
        return dict(reversed(parse_qsl(query, keep_blank_values=True)))
    found: dict[str, str] = {}
    for pair in query.split("&"):
        if pair:
            name, _, value = pair.partition("=")
            found.setdefault(name, value)
    return found


_TOKEN = r"[-!#$%&'*+.^_`|~0-9A-Za-z]++"
_SIMPLE_HEAD = re.compile(
    r"(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) (/[-A-Za-z0-9._~!$&'()*+,;=:@/?%]*+) HTTP/1\.1\r\n"
    # header lines: a token, a colon, optional whitespace, then a value that neither is empty
    # nor ends in whitespace (every quantifier possessive: no backtracking on hostile input)
    rf"((?:{_TOKEN}:[ \t]*+[!-~]++(?:[ \t]++[!-~]++)*+\r\n)*+)\r\n"
)
_HEADER_LINE = re.compile(rf"({_TOKEN}):[ \t]*+([^\r]++)\r\n")
_NOT_PLAIN = frozenset({"transfer-encoding", "upgrade", "expect"})
_KEEP_ALIVE = {"keep-alive": True, "close": False}


def simple_request(data: bytes, max_body_bytes: int) -> Request | None:
    """``data`` as one plain HTTP/1.1 request, whole, with nothing after it; None when it is
    anything else (the general reader then decides). Plain: one of the usual methods, a target
    of URI characters, header values of visible ASCII without trailing whitespace, one
    ``Host``, no repeated header, no ``Transfer-Encoding``, ``Upgrade`` or ``Expect``, a
    ``Connection`` that is ``close`` or ``keep-alive`` if any, and a body of exactly its
    ``Content-Length`` (at most ``max_body_bytes``)."""
    # Only a head shorter than the limit can match: what it holds is shorter still.
    head = _SIMPLE_HEAD.match(data[: MAX_HEAD_BYTES + 4].decode("latin-1"))
    if head is None:
        return None
    method, target, lines = head.groups()
    pairs = _HEADER_LINE.findall(lines)
    headers = {name.lower(): value for name, value in pairs}
    if len(headers) != len(pairs) or "host" not in headers or not _NOT_PLAIN.isdisjoint(headers):
        return None  # a repeated header, no Host, or a body framed otherwise
    declared = headers.get("content-length", "0")
    if not declared.isdigit() or (declared[0] == "0" and declared != "0") or len(declared) > 18:
        return None  # 19 digits and more: over any limit (and int() refuses over 4,300)
    length = int(declared)
    keep_alive = _KEEP_ALIVE.get(headers.get("connection", "keep-alive").lower())
    if length > max_body_bytes or len(data) - head.end() != length or keep_alive is None:
        return None
    raw_path, _, query = target.partition("?")
    path = unquote(raw_path) if "%" in raw_path else raw_path
    return Request(method, path, query_of(query), headers, data[head.end() :], keep_alive)


class RequestReader:
    """Bytes in (:meth:`feed`), whole requests out (:meth:`next_request`), in order. Plain
    requests are read by :func:`simple_request` until one is not; from then on, httptools
    (from the start with ``plain`` False: the first request is known not to be plain)."""

    def __init__(self, max_body_bytes: int, *, plain: bool = True) -> None:
        self._max_body = max_body_bytes
        self._parser: httptools.HttpRequestParser | None = None  # made when first needed
        if not plain:
            self._parser = httptools.HttpRequestParser(self)
        self._ready: deque[Request] = deque()
        self._url = b""
        self._headers: dict[str, str] = {}
        self._chunks: list[bytes] = []
        self._head_bytes = 0  # of the current head, as the parser reports it
        self._fed_in_head = 0  # bytes fed that left the current head still incomplete
        self._body_bytes = 0
        self._in_head = True
        self._hosts = 0  # Host headers of the current head
        self._version = "1.1"  # of the current request, once its head is complete
        self._refusal: Refusal | None = None
        self._failed: Refusal | None = None  # raised once the requests before it are taken
        self.busy = False  # part of a request has arrived
        self.expects_continue = False  # a client waits for ``100 Continue`` before its body
        self.upgraded: bytes | None = None  # after an upgrade request: the bytes that followed

    def feed(self, data: bytes) -> None:
        """Parse ``data``; raises :class:`Refusal` for a malformed or oversized request (from
        :meth:`next_request` instead when whole requests came before it)."""
        if self._parser is None:
            request = simple_request(data, self._max_body)
            if request is not None:
                self._ready.append(request)
                return
            self._parser = httptools.HttpRequestParser(self)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade as upgrade:
            self.upgraded = data[upgrade.args[0] :]
        except httptools.HttpParserCallbackError:
            assert self._refusal is not None
            self._fail(self._refusal)
        except httptools.HttpParserError as exc:
            self._fail(Refusal(400, f"malformed HTTP request: {exc}"))
        if self.busy and self._in_head:  # a head may never finish: bound what it can hold
            self._fed_in_head += len(data)
            if self._fed_in_head > MAX_HEAD_BYTES:
                raise Refusal(431, "the request head is over the server's limit")

    def next_request(self) -> Request | None:
        """The oldest whole request not yet taken, or None; raises the :class:`Refusal` of what
        followed them once they are all taken."""
        if self._ready:
            return self._ready.popleft()
        if self._failed is not None:
            raise self._failed
        return None

    @property
    def in_head(self) -> bool:
        """A request has begun and its head is not complete yet."""
        return self.busy and self._in_head

    def _fail(self, refusal: Refusal) -> None:
        self._failed = refusal
        if not self._ready:
            raise refusal from None

    # -- httptools callbacks ---------------------------------------------------------------
    def on_message_begin(self) -> None:
        self.busy = True
        self._in_head = True
        self._head_bytes = 0
        self._fed_in_head = 0
        self._hosts = 0
        self._url = b""
        self._headers = {}
        self._chunks = []
        self._body_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._url += url
        self._check_head(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_bytes += len(name) + len(value)  # _check_head, inlined (called per header)
        if self._head_bytes > MAX_HEAD_BYTES:
            self._refuse(Refusal(431, "the request head is over the server's limit"))
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        known = self._headers.get(key)
        if known is None:
            self._headers[key] = text
        else:
            self._headers[key] = f"{known}, {text}"
        if key == "host":
            self._hosts += 1

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_bytes = 0
        self._fed_in_head = 0
        assert self._parser is not None  # httptools calls back from its parser's feed
        self._version = self._parser.get_http_version()
        if self._version == "1.1" and self._hosts != 1:
            why = "is required" if not self._hosts else "must be sent once, not repeated"
            self._refuse(Refusal(400, f"the Host header {why} in HTTP/1.1 (RFC 9112 3.2)"))
        declared = self._headers.get("content-length", "").lstrip("0")  # llhttp takes 000…05
        if declared.isdigit() and int(declared) > self._max_body:  # < 2**64: llhttp checked
            self._refuse(Refusal(413, "the request body is over the server's limit"))
        if self._headers.get("expect", "").lower() == "100-continue":
            self.expects_continue = True

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        if self._body_bytes > self._max_body:
            self._refuse(Refusal(413, "the request body is over the server's limit"))
        self._chunks.append(body)

    def on_message_complete(self) -> None:
        self.busy = False
        self.expects_continue = False
        assert self._parser is not None
        request = request_of(
            self._parser.get_method().decode("latin-1"),
            self._url.decode("latin-1"),
            self._headers,
            b"".join(self._chunks),
        )
        # an HTTP/1.0 client gets one answer per connection: no keep-alive dialect
        request.keep_alive = self._version != "1.0" and self._parser.should_keep_alive()
        self._ready.append(request)

    def _check_head(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > MAX_HEAD_BYTES:
            self._refuse(Refusal(431, "the request head is over the server's limit"))

    def _refuse(self, refusal: Refusal) -> None:
        self._refusal = refusal
        raise refusal  # httptools wraps it; feed() raises it again


CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_STATUS_LINES = {s.value: f"HTTP/1.1 {s.value} {s.phrase}\r\n".encode() for s in HTTPStatus}


def encode_response(response: Response, *, date: bytes, close: bool, with_body: bool) -> bytes:
    """``response`` on the wire (``with_body`` False for HEAD: the headers of the body only)."""
    status_line = _STATUS_LINES.get(response.status) or f"HTTP/1.1 {response.status} \r\n".encode()
    parts = [status_line, b"date: ", date, b"\r\nserver: orbit\r\n"]
    if response.status != 204:
        parts += [b"content-type: ", response.content_type.encode("latin-1"),
                  b"\r\ncontent-length: ", str(len(response.body)).encode(), b"\r\n"]  # fmt: skip
    for name, value in response.headers:
        parts += [name.encode("latin-1"), b": ", value.encode("latin-1"), b"\r\n"]
    if close:
        parts.append(b"connection: close\r\n")
    parts.append(b"\r\n")
    if with_body and response.status != 204:
        parts.append(response.body)
    return b"".join(parts)
