"""The connection limits of http-api.md against hostile clients, with hostile bytes on real
loopback sockets: each test checks the server's answer, that it goes on serving, and that a
healthy client beside the attack is answered promptly. The limits are shortened (``Limits``)
so that no test waits for the real 30 or 60 seconds."""

from __future__ import annotations

import socket
from dataclasses import replace

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.settings
import pytest
import trio
from wsproto.events import AcceptConnection, CloseConnection, Message, TextMessage
from wsproto.events import Request as WsRequest

from orbit_actors.http.application import Limits

from .test_frames import raw_frame
from .test_http2 import RawH2
from .test_transport import LIMIT, Client, EchoApp, WsClient, running

SHORT = Limits(LIMIT, LIMIT, head_timeout=0.5, body_timeout=0.5, write_timeout=0.5)
PROMPTLY = 5.0  # seconds a healthy client may wait beside an attack (a generous bound)
HEADERS = [(":method", "GET"), (":path", "/x"), (":scheme", "http"), (":authority", "t")]


async def served_promptly(port: int) -> None:
    """A fresh, well-behaved client is answered 200."""
    with trio.fail_after(PROMPTLY):
        client = await Client.open(port)
        response, _ = await client.request("GET", "/healthy")
        assert response.status_code == 200


async def trickle(stream: trio.SocketStream, data: bytes, every: float = 0.05) -> None:
    """Send ``data`` a byte at a time (slowloris), until the server closes."""
    try:
        for byte in data:
            await stream.send_all(bytes([byte]))
            await trio.sleep(every)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


async def answer_of(stream: trio.SocketStream) -> bytes:
    """Everything the server sends until it closes."""
    received = b""
    with trio.fail_after(10):
        try:
            while data := await stream.receive_some(65536):
                received += data
        except trio.BrokenResourceError:
            pass
    return received


@pytest.mark.parametrize(
    ("sent", "trickled"),
    [(b"", b"GET / HTTP/1.1\r\nhost: x\r\nx-pad: " + b"a" * 500),
     (b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 500\r\n\r\n", b"b" * 500)],
    ids=["head", "body"],
)  # fmt: skip
async def test_a_request_sent_a_byte_at_a_time_is_408_at_its_deadline_and_closed(
    sent: bytes, trickled: bytes
) -> None:
    async with running(EchoApp(), limits=SHORT) as (_, port), trio.open_nursery() as nursery:
        slow = await trio.open_tcp_stream("127.0.0.1", port)
        await slow.send_all(sent)
        nursery.start_soon(trickle, slow, trickled)
        await served_promptly(port)
        assert (await answer_of(slow)).startswith(b"HTTP/1.1 408 ")
        nursery.cancel_scope.cancel()


async def test_a_request_trickled_after_a_plain_one_on_the_same_connection_is_408() -> None:
    async with running(EchoApp(), limits=SHORT) as (_, port), trio.open_nursery() as nursery:
        client = await Client.open(port)
        assert (await client.request("GET", "/plain"))[0].status_code == 200
        nursery.start_soon(
            trickle, client.stream, b"GET / HTTP/1.1\r\nhost: x\r\nx-pad: " + b"a" * 500
        )
        await served_promptly(port)
        assert (await answer_of(client.stream)).startswith(b"HTTP/1.1 408 ")
        nursery.cancel_scope.cancel()


async def test_an_opening_that_trickles_like_the_http2_preface_is_408() -> None:
    async with running(EchoApp(), limits=SHORT) as (_, port), trio.open_nursery() as nursery:
        slow = await trio.open_tcp_stream("127.0.0.1", port)
        nursery.start_soon(trickle, slow, b"PRI * HTTP/2.0\r\n\r\nSM", 0.2)
        assert (await answer_of(slow)).startswith(b"HTTP/1.1 408 ")
        nursery.cancel_scope.cancel()


async def test_blank_lines_do_not_keep_an_idle_connection_open() -> None:
    limits = replace(SHORT, keep_alive_timeout=0.5)
    async with running(EchoApp(), limits=limits) as (_, port), trio.open_nursery() as nursery:
        idle = await trio.open_tcp_stream("127.0.0.1", port)
        nursery.start_soon(trickle, idle, b"\r\n" * 200, 0.1)  # never begins a request
        assert await answer_of(idle) == b""
        nursery.cancel_scope.cancel()


async def test_at_the_connection_cap_new_connections_wait_and_are_served_once_one_ends() -> None:
    limits = replace(SHORT, max_connections=3)
    async with running(EchoApp(), limits=limits) as (server, port):
        held = [await Client.open(port) for _ in range(3)]
        for client in held:  # each is being served before the next one arrives
            assert (await client.request("GET", "/held"))[0].status_code == 200
        waiting = [await Client.open(port) for _ in range(2)]  # the kernel's backlog holds them
        for client in waiting:
            await client.stream.send_all(b"GET /waiting HTTP/1.1\r\nhost: x\r\n\r\n")
        assert (await held[1].request("GET", "/still"))[0].status_code == 200
        assert server.statistics() == {"open": 3, "max_connections": 3}
        for client in held[:2]:
            await client.stream.aclose()
        for client in waiting:  # neither refused nor lost: served as places free up
            with trio.fail_after(PROMPTLY):
                assert (await client.response())[0].status_code == 200
        assert (await held[2].request("GET", "/still"))[0].status_code == 200


async def test_a_client_that_stops_reading_is_closed_after_the_write_timeout() -> None:
    async with running(EchoApp(), limits=SHORT) as (_, port):
        reader = await trio.open_tcp_stream("127.0.0.1", port)
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        await reader.send_all(b"GET /big HTTP/1.1\r\nhost: x\r\n\r\n" * 200)  # 60 MB of answers
        await trio.sleep(2)  # not reading: the server's writes stall
        await served_promptly(port)
        received = await answer_of(reader)  # what the buffers held, then the end
        assert 0 < len(received) < 200 * 300_000


async def test_a_client_that_stops_reading_one_plain_answer_is_closed_after_the_write_timeout() -> (
    None
):
    async with running(EchoApp(), limits=SHORT) as (_, port):
        reader = await trio.open_tcp_stream("127.0.0.1", port)
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        await reader.send_all(b"GET /big HTTP/1.1\r\nhost: x\r\n\r\n")  # one whole request
        await trio.sleep(2)  # not reading: the answer's write stalls
        await served_promptly(port)
        received = await answer_of(reader)  # what the buffers held, then the end
        assert 0 < len(received) < 300_000


async def test_a_request_without_host_or_with_two_is_400() -> None:
    async with running(EchoApp()) as (_, port):
        for head in (b"GET / HTTP/1.1\r\n\r\n", b"GET / HTTP/1.1\r\nhost: a\r\nhost: b\r\n\r\n"):
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_all(head)
            answer = await answer_of(stream)
            assert answer.startswith(b"HTTP/1.1 400 ") and b"Host header" in answer
        old = await trio.open_tcp_stream("127.0.0.1", port)
        await old.send_all(b"GET / HTTP/1.0\r\n\r\n")  # HTTP/1.0 has no Host to require
        assert (await answer_of(old)).startswith(b"HTTP/1.1 200 ")


async def test_a_request_followed_by_garbage_in_one_read_is_answered_before_the_400() -> None:
    async with running(EchoApp()) as (_, port):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(b"GET /first HTTP/1.1\r\nhost: x\r\n\r\n\x00\x01garbage\r\n\r\n")
        answer = await answer_of(stream)
        assert answer.startswith(b"HTTP/1.1 200 ") and b'"/first"' in answer
        assert b"HTTP/1.1 400 " in answer


def reset_pairs(client: RawH2, count: int) -> bytes:
    """``count`` streams opened and reset at once (the rapid reset attack)."""
    for index in range(count):
        stream_id = 1 + 2 * index
        client.h2.send_headers(stream_id, HEADERS, end_stream=True)
        client.h2.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
    return client.h2.data_to_send()


async def test_http2_rapid_reset_is_answered_with_goaway_enhance_your_calm() -> None:
    async with running(EchoApp()) as (_, port):
        client = await RawH2.open(port)
        await client.stream.send_all(reset_pairs(client, 1000))
        await served_promptly(port)
        events = await client.events()
        ended = [e for e in events if isinstance(e, h2.events.ConnectionTerminated)]
        assert [e.error_code for e in ended] == [h2.errors.ErrorCodes.ENHANCE_YOUR_CALM]


async def test_http2_resets_under_the_limit_leave_the_connection_open() -> None:
    async with running(EchoApp()) as (_, port):
        client = await RawH2.open(port)
        await client.stream.send_all(reset_pairs(client, 150))
        events = await client.events()
        assert not any(isinstance(e, h2.events.ConnectionTerminated) for e in events)


async def test_http2_a_protocol_error_is_answered_with_one_goaway() -> None:
    async with running(EchoApp()) as (_, port):
        client = await RawH2.open(port)
        await client.stream.send_all(b"\x00\x00\x05\x07\x00\x00\x00\x00\x01garbage")
        ended = [e for e in await client.events() if isinstance(e, h2.events.ConnectionTerminated)]
        assert len(ended) == 1 and ended[0].error_code != h2.errors.ErrorCodes.NO_ERROR


async def test_http2_a_client_that_keeps_its_window_shut_is_closed_after_the_write_timeout() -> (
    None
):
    async with running(EchoApp(), limits=SHORT) as (_, port):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        config = h2.config.H2Configuration(client_side=True)
        shut = h2.connection.H2Connection(config)
        shut.local_settings = h2.settings.Settings(
            client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0}
        )
        shut.initiate_connection()
        shut.send_headers(1, [(":method", "GET"), (":path", "/big"), (":scheme", "http"),
                              (":authority", "t")], end_stream=True)  # fmt: skip
        await stream.send_all(shut.data_to_send())
        await served_promptly(port)
        await answer_of(stream)  # ends: the server gave up on the stalled answer


async def test_http2_a_stream_over_the_concurrency_limit_ends_the_connection() -> None:
    app = EchoApp()
    async with running(app) as (_, port):
        client = await RawH2.open(port)  # it never reads the server's settings: no limit known
        for index in range(101):  # /slow holds each stream open
            client.h2.send_headers(1 + 2 * index, [(":method", "GET"), (":path", "/slow"),
                                                   (":scheme", "http"), (":authority", "t")],
                                   end_stream=True)  # fmt: skip
        await client.stream.send_all(client.h2.data_to_send())
        ended = [e for e in await client.events() if isinstance(e, h2.events.ConnectionTerminated)]
        assert [e.error_code for e in ended] == [h2.errors.ErrorCodes.PROTOCOL_ERROR]
        await served_promptly(port)
        app.release.set()


async def test_a_websocket_message_in_more_than_1024_fragments_closes_with_1009() -> None:
    async with running(EchoApp()) as (_, port):
        client, _ = await WsClient.open(port)
        pieces = raw_frame(0x01, b"") + raw_frame(0x00, b"") * 1023 + raw_frame(0x80, b"")
        await client.stream.send_all(pieces)  # 1,025 empty fragments: no size limit trips
        closed = await client.next_event()
        assert isinstance(closed, CloseConnection) and closed.code == 1009
        await served_promptly(port)


async def test_a_websocket_message_in_1024_fragments_is_taken() -> None:
    async with running(EchoApp()) as (_, port):
        client, _ = await WsClient.open(port)
        pieces = raw_frame(0x01, b"a") + raw_frame(0x00, b"b") * 1022 + raw_frame(0x80, b"c")
        await client.stream.send_all(pieces)  # 1,024 bytes: the size limit is 1,000
        closed = await client.next_event()
        assert isinstance(closed, CloseConnection) and closed.code == 1009
        client, _ = await WsClient.open(port)
        pieces = raw_frame(0x01, b"a") + raw_frame(0x00, b"") * 1022 + raw_frame(0x80, b"c")
        await client.stream.send_all(pieces)
        echoed = await client.next_event()
        assert isinstance(echoed, TextMessage) and echoed.data == "ac"


async def test_a_websocket_length_with_its_top_bit_set_closes_with_1002() -> None:
    async with running(EchoApp()) as (_, port):
        client, _ = await WsClient.open(port)
        await client.stream.send_all(bytes([0x81, 0x80 | 127]) + b"\x80" + b"\x00" * 7)
        closed = await client.next_event()
        assert isinstance(closed, CloseConnection) and closed.code == 1002


async def test_a_websocket_client_that_stops_reading_is_closed_after_the_write_timeout() -> None:
    async with running(EchoApp(), limits=replace(SHORT, max_message_bytes=100_000)) as (_, port):
        client, _ = await WsClient.open(port)
        client.stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        with trio.move_on_after(3):  # the echoes fill the buffers; then the server gives up
            try:
                while True:
                    await client.send(Message(data="x" * 50_000))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
        await served_promptly(port)
        await answer_of(client.stream)  # ends: the server closed the connection


ALL_SHORT = replace(SHORT, keep_alive_timeout=0.5)


async def test_a_websocket_outlives_the_request_and_keep_alive_deadlines() -> None:
    async with running(EchoApp(), limits=ALL_SHORT) as (_, port):
        client = await Client.open(port)
        assert (await client.request("GET", "/first"))[0].status_code == 200
        socket = WsClient(client.stream)  # the upgrade is the connection's second request
        await socket.stream.send_all(socket.ws.send(WsRequest(host="t", target="/ws")))
        assert isinstance(await socket.next_event(), AcceptConnection)
        await trio.sleep(1.5)  # three times every timeout
        await socket.send(Message(data="still here"))
        echoed = await socket.next_event()
        assert isinstance(echoed, TextMessage) and echoed.data == "still here"


async def test_a_slow_answer_is_not_cut_by_the_request_deadlines() -> None:
    app = EchoApp()
    async with running(app, limits=ALL_SHORT) as (_, port), trio.open_nursery() as nursery:
        client = await Client.open(port)
        assert (await client.request("GET", "/first"))[0].status_code == 200
        nursery.start_soon(release_later, app)
        response, _ = await client.request("GET", "/slow")  # after an idle wait: its deadline
        assert response.status_code == 200


async def test_a_slow_answer_over_http2_is_not_cut_by_the_request_deadlines() -> None:
    app = EchoApp()
    async with running(app, limits=ALL_SHORT) as (_, port), trio.open_nursery() as nursery:
        client = await RawH2.open(port)
        client.h2.send_headers(1, [(":method", "GET"), (":path", "/slow"), (":scheme", "http"),
                                   (":authority", "t")], end_stream=True)  # fmt: skip
        await client.stream.send_all(client.h2.data_to_send())
        nursery.start_soon(release_later, app)
        with trio.fail_after(10):
            while not any(isinstance(e, h2.events.ResponseReceived) for e in await client.events()):
                pass


async def release_later(app: EchoApp) -> None:
    await trio.sleep(1.5)  # three times every timeout
    app.release.set()
