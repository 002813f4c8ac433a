"""The client's half of RFC 6455 without I/O: masking, masked frames a server reads back, server
frames a client reads, the opening handshake's request and the checks on its answer (against
Orbit's server side and against wsproto as an independent server)."""

from __future__ import annotations

import base64
import itertools
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Message, Ping, TextMessage
from wsproto.events import Request as WsRequest

from orbit_actors.http import frames
from orbit_actors.http.client_handshake import (
    Answer,
    ClientHandshake,
    HandshakeError,
    parse_answer,
)
from orbit_actors.http.client_open import _Target
from orbit_actors.http.frames import Close, FrameReader, MaskKeys, ProtocolViolation

KEYS = st.binary(min_size=4, max_size=4)
TEXTS = st.text(max_size=3000)


def read_all(reader: FrameReader, data: bytes, cuts: list[int] | None = None) -> list[object]:
    """Feed ``data`` (in pieces cut at ``cuts``) and collect everything read."""
    found: list[object] = []
    at = 0
    for cut in sorted({*(cuts or []), len(data)}):
        reader.feed(data[at:cut])
        at = cut
        while (item := reader.next()) is not None:
            found.append(item)
    return found


def fragments(payload: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(payload)) for c in cuts})
    edges = [0, *points, len(payload)]
    return [payload[a:b] for a, b in itertools.pairwise(edges)] or [b""]


@given(st.binary(max_size=5000), KEYS)
def test_masking_is_a_bytewise_xor_and_its_own_inverse(payload: bytes, key: bytes) -> None:
    masked = frames.unmask(payload, key)
    assert masked == bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    assert frames.unmask(masked, key) == payload


@given(TEXTS, KEYS, st.lists(st.integers(min_value=0, max_value=4000), max_size=4),
       st.lists(st.integers(min_value=0, max_value=5000), max_size=6))  # fmt: skip
def test_masked_client_frames_in_fragments_are_read_back_by_a_server(
    text: str, key: bytes, splits: list[int], cuts: list[int]
) -> None:
    parts = fragments(text.encode(), splits)
    data = b"".join(
        frames.encode_masked_frame(
            frames.TEXT if i == 0 else frames.CONTINUATION, part, key, fin=i == len(parts) - 1
        )
        for i, part in enumerate(parts)
    )
    assert read_all(FrameReader(1 << 20), data, cuts) == [text]


@given(st.one_of(TEXTS, st.binary(max_size=70000)),
       st.lists(st.integers(min_value=0, max_value=80000), max_size=6))  # fmt: skip
def test_server_frames_are_read_by_a_client_in_any_pieces(
    message: str | bytes, cuts: list[int]
) -> None:
    opcode = frames.TEXT if isinstance(message, str) else frames.BINARY
    payload = message.encode() if isinstance(message, str) else message
    data = frames.encode_frame(opcode, payload) + frames.encode_close(4000, "bye")
    found = read_all(FrameReader(1 << 20, masked=False), data, cuts)
    assert found == [message, Close(4000, "bye")]


def test_a_client_refuses_a_masked_frame_and_a_server_an_unmasked_one() -> None:
    masked = frames.encode_masked_frame(frames.TEXT, b"hi", b"abcd")
    with pytest.raises(ProtocolViolation, match="from a server must not be masked") as raised:
        read_all(FrameReader(100, masked=False), masked)
    assert raised.value.code == 1002
    with pytest.raises(ProtocolViolation, match="from a client must be masked"):
        read_all(FrameReader(100), frames.encode_frame(frames.TEXT, b"hi"))


def test_a_server_message_over_the_clients_limit_is_refused_from_its_header() -> None:
    header = frames.encode_frame(frames.TEXT, b"x" * 70000)[:10]
    with pytest.raises(ProtocolViolation) as raised:
        read_all(FrameReader(65536, masked=False), header)
    assert raised.value.code == 1009


@given(st.text(max_size=200))
def test_a_close_reason_is_cut_to_a_control_frame_and_stays_utf8(reason: str) -> None:
    payload = frames.close_payload(4000, reason)
    assert len(payload) <= 125
    assert reason.startswith(payload[2:].decode("utf-8"))
    assert read_all(FrameReader(100, masked=False), frames.encode_frame(frames.CLOSE, payload))


def test_mask_keys_are_four_bytes_drawn_from_urandom_a_thousand_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    draws: list[int] = []
    real_urandom = os.urandom

    def urandom(size: int) -> bytes:
        draws.append(size)
        return real_urandom(size)

    monkeypatch.setattr(os, "urandom", urandom)
    keys = MaskKeys()
    taken = [keys.next() for _ in range(2049)]
    assert {len(key) for key in taken} == {4} and draws == [4096] * 3
    assert len(set(taken)) > 2000  # not one key over and over


# -- the opening handshake -----------------------------------------------------------------
def request_headers(handshake: ClientHandshake) -> dict[str, str]:
    lines = handshake.request().decode("latin-1").split("\r\n")
    assert lines[0] == "GET /v1/workers/connect?x=1 HTTP/1.1" and lines[-2:] == ["", ""]
    return {k.lower(): v for k, _, v in (line.partition(": ") for line in lines[1:-2])}


def test_the_upgrade_request_is_one_orbits_server_accepts() -> None:
    handshake = ClientHandshake("h:1", "/v1/workers/connect?x=1", [("Authorization", "Bearer t")])
    headers = request_headers(handshake)
    assert headers["authorization"] == "Bearer t" and headers["host"] == "h:1"
    assert len(base64.b64decode(headers["sec-websocket-key"])) == 16
    answer = frames.accept_handshake(headers)
    assert handshake.check(parse_answer(answer.split(b"\r\n\r\n")[0])) is None


def test_each_handshake_has_a_fresh_key() -> None:
    assert ClientHandshake("h", "/").key != ClientHandshake("h", "/").key


def test_a_header_with_a_line_break_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="line break"):
        ClientHandshake("h", "/", [("Authorization", "Bearer x\r\nX-Evil: 1")])


def good_answer(handshake: ClientHandshake, *extra: tuple[str, str]) -> Answer:
    headers = [("upgrade", "websocket"), ("connection", "Upgrade"),
               ("sec-websocket-accept", frames.accept_key(handshake.key)), *extra]  # fmt: skip
    return Answer(101, "Switching Protocols", headers)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"sec-websocket-accept": "d3Jvbmcga2V5IGhlcmUhIQ=="}, "Accept does not match"),
        ({"upgrade": "h2c"}, "Upgrade: websocket"),
        ({"connection": "keep-alive"}, "Connection: upgrade"),
        ({"sec-websocket-extensions": "permessage-deflate"}, "extension"),
        ({"sec-websocket-protocol": "other"}, "not offered"),
    ],
)
def test_a_101_answer_that_breaks_a_rule_is_a_handshake_error(
    change: dict[str, str], why: str
) -> None:
    handshake = ClientHandshake("h", "/", subprotocols=["orbit.v1"])
    answer = good_answer(handshake)
    headers = dict(answer.headers) | change
    with pytest.raises(HandshakeError, match=why) as raised:
        handshake.check(Answer(101, "Switching Protocols", list(headers.items())))
    assert raised.value.status == 101


def test_a_non_101_answer_is_a_handshake_error_with_its_status_and_body() -> None:
    handshake = ClientHandshake("h", "/")
    with pytest.raises(HandshakeError, match='answered 401 Unauthorized: {"m') as raised:
        handshake.check(
            parse_answer(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 9"), b'{"m": 1}'
        )
    assert raised.value.status == 401 and raised.value.body == b'{"m": 1}'


def test_the_subprotocol_the_server_picked_is_returned() -> None:
    handshake = ClientHandshake("h", "/", subprotocols=["a", "orbit.v1"])
    assert "Sec-WebSocket-Protocol: a, orbit.v1" in handshake.request().decode()
    assert handshake.check(good_answer(handshake, ("sec-websocket-protocol", "orbit.v1"))) == (
        "orbit.v1"
    )


@pytest.mark.parametrize(
    "head", [b"SSH-2.0-OpenSSH", b"HTTP/1.1 abc OK", b"HTTP/1.1 101 OK\r\nno colon here"]
)
def test_an_answer_that_is_not_http_is_a_handshake_error(head: bytes) -> None:
    with pytest.raises(HandshakeError):
        parse_answer(head)


# -- against wsproto as an independent server ----------------------------------------------
def test_wsproto_as_server_accepts_the_handshake_and_reads_masked_frames() -> None:
    server = WSConnection(ConnectionType.SERVER)
    handshake = ClientHandshake("localhost", "/", subprotocols=["orbit.v1"])
    server.receive_data(handshake.request())
    request = next(server.events())
    assert isinstance(request, WsRequest) and request.subprotocols == ["orbit.v1"]
    answer = server.send(AcceptConnection(subprotocol="orbit.v1"))
    head, _, rest = answer.partition(b"\r\n\r\n")
    assert handshake.check(parse_answer(head)) == "orbit.v1" and rest == b""
    keys = MaskKeys()
    reply = server.send(TextMessage(data="x" * 70000))
    assert read_all(FrameReader(1 << 20, masked=False), reply) == ["x" * 70000]
    server.receive_data(
        frames.encode_masked_frame(frames.TEXT, "héllo ".encode(), keys.next(), fin=False)
        + frames.encode_masked_frame(frames.PING, b"p", keys.next())
        + frames.encode_masked_frame(frames.CONTINUATION, b"world", keys.next())
        + frames.encode_masked_frame(frames.CLOSE, frames.close_payload(4001, "done"), keys.next())
    )
    events = list(server.events())
    texts = [e.data for e in events if isinstance(e, Message)]
    assert "".join(str(t) for t in texts) == "héllo world"
    assert any(isinstance(e, Ping) and e.payload == b"p" for e in events)
    closing = [e for e in events if isinstance(e, CloseConnection)]
    assert closing[0].code == 4001 and closing[0].reason == "done"
    echo = server.send(closing[0].response())
    assert read_all(FrameReader(100, masked=False), echo) == [Close(4001, "done")]


@pytest.mark.parametrize(
    ("url", "host", "port", "resource", "header"),
    [
        ("ws://127.0.0.1:7233/v1/workers/connect", "127.0.0.1", 7233, "/v1/workers/connect",
         "127.0.0.1:7233"),
        ("wss://orbit.example/x?a=1", "orbit.example", 443, "/x?a=1", "orbit.example"),
        ("ws://[::1]:80", "::1", 80, "/", "[::1]"),
        ("ws://[::1]:9000/p", "::1", 9000, "/p", "[::1]:9000"),
    ],
)  # fmt: skip
def test_a_url_gives_the_address_the_resource_and_the_host_header(
    url: str, host: str, port: int, resource: str, header: str
) -> None:
    target = _Target.parse(url)
    assert (target.host, target.port, target.resource, target.host_header) == (
        host, port, resource, header,
    )  # fmt: skip
