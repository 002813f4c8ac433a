"""RFC 6455 framing without I/O: the handshake answer, client frames read into messages (checked
against wsproto as the client), server frames wsproto can read, and every framing rule a client
can break ending in the close code the RFC names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Event, Message, TextMessage
from wsproto.events import Request as WsRequest

from orbit_actors.http import frames
from orbit_actors.http.frames import Close, FrameReader, Ping, ProtocolViolation
from orbit_actors.http.http1 import Refusal

KEY = "dGhlIHNhbXBsZSBub25jZQ=="
HEADERS = {"upgrade": "websocket", "connection": "keep-alive, Upgrade",
           "sec-websocket-key": KEY, "sec-websocket-version": "13"}  # fmt: skip
MASK = b"\x01\x02\x03\x04"


def client() -> WSConnection:
    """A wsproto client past its handshake with :func:`frames.accept_handshake`."""
    ws = WSConnection(ConnectionType.CLIENT)
    request = ws.send(WsRequest(host="localhost", target="/")).decode("latin-1")
    sent = dict(line.lower().split(": ", 1) for line in request.split("\r\n")[1:] if line)
    key = next(line.split(": ", 1)[1] for line in request.split("\r\n")
               if line.lower().startswith("sec-websocket-key"))  # fmt: skip
    ws.receive_data(frames.accept_handshake({**sent, "sec-websocket-key": key}))
    assert isinstance(next(ws.events()), AcceptConnection)
    return ws


def raw_frame(first: int, payload: bytes, *, masked: bool = True) -> bytes:
    """A client frame built by hand (first byte as given) to break rules wsproto will not."""
    size = len(payload)
    length = bytes([size]) if size < 126 else bytes([126]) + size.to_bytes(2, "big")
    if not masked:
        return bytes([first, length[0]]) + length[1:] + payload
    return bytes([first, 0x80 | length[0]]) + length[1:] + MASK + frames.unmask(payload, MASK)


def read_all(reader: FrameReader, data: bytes) -> list[object]:
    reader.feed(data)
    found: list[object] = []
    while (item := reader.next()) is not None:
        found.append(item)
    return found


def violation(data: bytes, limit: int = 1000) -> ProtocolViolation:
    with pytest.raises(ProtocolViolation) as raised:
        read_all(FrameReader(limit), data)
    return raised.value


def test_the_handshake_answer_carries_the_rfc_example_accept_key() -> None:
    answer = frames.accept_handshake(HEADERS)
    assert answer.startswith(b"HTTP/1.1 101 ")
    assert b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n" in answer


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"sec-websocket-key": ""}, 400),
        ({"sec-websocket-key": "c2hvcnQ="}, 400),
        ({"connection": "keep-alive"}, 400),
        ({"sec-websocket-version": "8"}, 426),
    ],
)
def test_a_handshake_this_server_does_not_speak_is_refused(
    change: dict[str, str], status: int
) -> None:
    with pytest.raises(Refusal) as refused:
        frames.accept_handshake({**HEADERS, **change})
    assert refused.value.status == status
    if status == 426:
        assert ("sec-websocket-version", "13") in refused.value.headers


@given(
    messages=st.lists(
        st.tuples(st.text(max_size=300), st.integers(min_value=1, max_value=4)), max_size=6
    ),
    chunk=st.integers(min_value=1, max_value=97),
)
def test_messages_a_client_sends_in_fragments_and_pieces_are_read_whole(
    messages: list[tuple[str, int]], chunk: int
) -> None:
    ws, data = client(), b""
    for text, pieces in messages:
        cut = max(1, len(text) // pieces)
        parts = [text[i : i + cut] for i in range(0, len(text), cut)] or [""]
        for index, part in enumerate(parts):
            data += ws.send(Message(data=part, message_finished=index == len(parts) - 1))
    reader, found = FrameReader(10_000), []
    for at in range(0, len(data), chunk):
        found += read_all(reader, data[at : at + chunk])
    assert found == [text for text, _ in messages]


@pytest.mark.parametrize("size", [0, 1, 125, 126, 65535, 65536, 70000])
def test_server_frames_of_every_length_form_are_read_by_a_client(size: int) -> None:
    ws = client()
    ws.receive_data(frames.encode_text("é" * (size // 2) + "x" * (size % 2)))
    events: list[Event] = list(ws.events())
    assert len(events) == 1 and isinstance(events[0], TextMessage)
    assert len(events[0].data.encode()) == size


@given(
    st.lists(
        st.text(st.characters(codec="utf-8"), max_size=200)
        | st.sampled_from([125, 126, 127, 65535, 65536]).map(lambda size: "x" * size),
        max_size=6,
    )
)
def test_texts_framed_from_their_utf8_bytes_are_the_frames_of_each_text_joined(
    texts: list[str],
) -> None:
    payloads = tuple(text.encode() for text in texts)
    assert frames.encode_texts(payloads) == b"".join(map(frames.encode_text, texts))


def test_a_close_frame_is_read_by_a_client_with_its_code() -> None:
    ws = client()
    ws.receive_data(frames.encode_close(1008, "too many protocol errors"))
    closed = next(ws.events())
    assert isinstance(closed, CloseConnection) and closed.code == 1008


def test_pings_are_returned_pongs_dropped_and_a_close_read_with_its_code() -> None:
    data = raw_frame(0x89, b"hi") + raw_frame(0x8A, b"late") + raw_frame(0x88, b"\x03\xe8bye")
    assert read_all(FrameReader(100), data) == [Ping(b"hi"), Close(1000, "bye")]
    assert read_all(FrameReader(100), raw_frame(0x88, b"")) == [Close(frames.NO_CODE, "")]


def test_binary_messages_are_bytes() -> None:
    assert read_all(FrameReader(100), raw_frame(0x82, b"\x00\xff")) == [b"\x00\xff"]


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (raw_frame(0x81, b"hi", masked=False), 1002),
        (raw_frame(0xC1, b"hi"), 1002),  # RSV1 without an extension
        (raw_frame(0x83, b"hi"), 1002),  # a reserved data opcode
        (raw_frame(0x8B, b"hi"), 1002),  # a reserved control opcode
        (raw_frame(0x89, b"x" * 126), 1002),  # a control frame over 125 bytes
        (raw_frame(0x09, b"hi"), 1002),  # a fragmented ping
        (raw_frame(0x80, b"hi"), 1002),  # a continuation of nothing
        (raw_frame(0x01, b"a") + raw_frame(0x81, b"b"), 1002),  # a new message mid-message
        (raw_frame(0x81, b"\xff\xfe"), 1007),
        (raw_frame(0x88, b"\x03"), 1002),  # a one-byte close payload
        (raw_frame(0x88, b"\x03\xed"), 1002),  # 1005 may not be sent
        (raw_frame(0x88, b"\x03\xe8\xff"), 1007),
    ],
)
def test_each_broken_framing_rule_has_its_close_code(data: bytes, code: int) -> None:
    assert violation(data).code == code


def test_a_message_over_the_limit_is_refused_from_its_header_alone() -> None:
    header = raw_frame(0x81, b"x" * 2000)[:8]  # header and mask, no payload yet
    assert violation(header).code == 1009
    fragments = raw_frame(0x01, b"x" * 600) + raw_frame(0x80, b"x" * 600)[:8]
    assert violation(fragments).code == 1009


def test_after_discarding_only_the_close_frame_is_read_even_past_the_limit() -> None:
    reader = FrameReader(100)
    reader.discard_messages()
    data = raw_frame(0x81, b"x" * 5000) + raw_frame(0x88, b"\x03\xe8")
    found: list[object] = []
    for at in range(0, len(data), 300):
        found += read_all(reader, data[at : at + 300])
    assert found == [Close(1000, "")]


@given(
    buffer=st.binary(max_size=3000),
    start=st.integers(min_value=0, max_value=11),
    mask=st.binary(min_size=4, max_size=4),
    as_bytearray=st.booleans(),
)
def test_unmasking_is_a_bytewise_xor_with_the_repeated_mask(
    buffer: bytes, start: int, mask: bytes, as_bytearray: bool
) -> None:
    # any length (either side of the word-wise and the per-lane paths), a payload cut from a
    # buffer at any offset, and bytes or a bytearray (the reader's buffer) on either argument
    payload = (bytearray(buffer) if as_bytearray else buffer)[start:]
    key = bytearray(mask) if as_bytearray else mask
    expected = bytes(byte ^ mask[index % 4] for index, byte in enumerate(payload))
    assert frames.unmask(payload, key) == expected


@given(
    size=st.integers(min_value=0, max_value=80) | st.integers(min_value=1015, max_value=1035),
    mask=st.binary(min_size=4, max_size=4),
)
def test_unmasking_short_lengths_and_those_near_the_switch_is_a_bytewise_xor(
    size: int, mask: bytes
) -> None:
    payload = (bytes(range(256)) * 5)[:size]
    expected = bytes(byte ^ mask[index % 4] for index, byte in enumerate(payload))
    assert frames.unmask(payload, mask) == expected


_frames = st.lists(
    st.builds(
        raw_frame,
        st.sampled_from([0x81, 0x01, 0x80, 0x00, 0x82, 0x89, 0x8A, 0x88, 0x83, 0xC1, 0x09]),
        st.binary(max_size=700),
        masked=st.integers(min_value=0, max_value=9).map(bool),  # a tenth unmasked
    ),
    max_size=8,
)


@given(frames=_frames, noise=st.binary(max_size=40), chunk=st.integers(min_value=1, max_value=700))
def test_any_frames_give_messages_or_a_violation_and_never_buffer_more_than_one_frame(
    frames: list[bytes], noise: bytes, chunk: int
) -> None:
    data = b"".join(frames) + noise
    reader = FrameReader(500)
    try:
        for at in range(0, len(data), chunk):
            for found in read_all(reader, data[at : at + chunk]):
                assert isinstance(found, str | bytes | Ping | Close)
            assert len(reader._buffer) <= 14 + 500  # at most one frame's header and payload
    except ProtocolViolation as violation:
        assert violation.code in (1002, 1007, 1009)


class _GeneralPathOnly(FrameReader):
    """The reader with its shortcut for whole text frames turned off: the reference."""

    def _whole_text(self) -> str | None:
        return None


def _outcome(reader: FrameReader, pieces: list[bytes]) -> tuple[list[object], int | None]:
    found: list[object] = []
    try:
        for piece in pieces:
            found += read_all(reader, piece)
    except ProtocolViolation as violation:
        return found, violation.code
    return found, None


def _frames_masked(masked: bool) -> st.SearchStrategy[list[bytes]]:
    """Frames of every kind, each masked as a reader that wants ``masked`` requires (one in
    twenty not), with text frames of both short length forms."""
    return st.lists(
        st.builds(
            raw_frame,
            st.sampled_from([0x81, 0x81, 0x01, 0x80, 0x00, 0x82, 0x89, 0x8A, 0x88, 0xC1]),
            st.binary(max_size=300) | st.text(max_size=200).map(str.encode),
            masked=st.integers(min_value=0, max_value=19).map(lambda n: masked == (n > 0)),
        ),
        max_size=8,
    )


@given(
    data=st.data(),
    masked=st.booleans(),
    limit=st.sampled_from([100, 500, 100_000]),
    chunk=st.integers(min_value=0, max_value=800) | st.just(0),
)
def test_the_shortcut_for_whole_text_frames_reads_and_refuses_as_the_general_path(
    data: st.DataObject, masked: bool, limit: int, chunk: int
) -> None:
    """Fed in pieces of ``chunk`` bytes, or frame by frame when it is 0."""
    frames = data.draw(_frames_masked(masked))
    stream = b"".join(frames)
    pieces = [stream[at : at + chunk] for at in range(0, len(stream), chunk)] if chunk else frames
    expected = _outcome(_GeneralPathOnly(limit, masked=masked), pieces)
    assert _outcome(FrameReader(limit, masked=masked), pieces) == expected


@pytest.mark.parametrize("masked", [True, False])
def test_a_whole_text_frame_fed_after_a_first_fragment_is_refused_as_a_new_message(
    masked: bool,
) -> None:
    reader = FrameReader(500, masked=masked)
    assert read_all(reader, raw_frame(0x01, b"ab", masked=masked)) == []
    with pytest.raises(ProtocolViolation) as raised:
        read_all(reader, raw_frame(0x81, b"cd", masked=masked))
    assert raised.value.code == 1002
