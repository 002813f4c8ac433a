"""The WebSocket client on real loopback sockets: against Orbit's own server transport (plain and
TLS), and against hand-written servers that fragment, ping, close with codes, send too much,
refuse the handshake, answer with a wrong key, or drop the connection mid-frame."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trustme
from trio.testing import wait_all_tasks_blocked

from orbit_actors.http import (
    ClientWebSocket,
    HandshakeError,
    WebSocketClosedError,
    connect_websocket,
    frames,
    open_websocket,
)
from orbit_actors.http.application import Limits, ServerSocket
from orbit_actors.http.direct_stream import DirectStream
from orbit_actors.http.frames import Close, FrameReader
from orbit_actors.http.http1 import Request, Response
from orbit_actors.http.transport import Server, open_listeners
from orbit_actors.http.websocket import SocketClosed

LIMIT = 4 * 1024 * 1024
GUARD = 20  # seconds: a hang guard on every network test, never a speed assertion


class EchoApp:
    """``/ws`` echoes each message; ``close CODE REASON`` makes it close with that code;
    ``whoami`` answers the ``Authorization`` header the handshake carried."""

    async def respond(self, request: Request) -> Response:
        return Response(404, b"{}")

    async def websocket(self, request: Request, socket: ServerSocket) -> Response | None:
        if request.path != "/ws":
            return Response(403, b'{"message": "no socket here"}')
        await socket.accept()
        try:
            while True:
                message = await socket.receive()
                assert isinstance(message, str)
                if message.startswith("close "):
                    _, code, reason = message.split(" ", 2)
                    await socket.close(int(code), reason)
                    return None
                answer = (
                    request.headers.get("authorization", "") if message == "whoami" else message
                )
                await socket.send_utf8(answer.encode())
        except SocketClosed:
            return None


def refusal(status: int, message: str) -> Response:
    return Response(status, json.dumps({"status": status, "message": message}).encode())


@asynccontextmanager
async def orbit_server(context: ssl.SSLContext | None = None) -> AsyncIterator[str]:
    """Orbit's transport serving :class:`EchoApp`; yields the ws(s) base URL."""
    server = Server(EchoApp(), Limits(LIMIT, LIMIT), refusal)
    listeners, urls = await open_listeners("127.0.0.1:0", context)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve, listeners, nursery)
        yield "ws" + urls[0][4:]
        nursery.cancel_scope.cancel()


# -- against Orbit's own server ------------------------------------------------------------
async def test_messages_of_every_size_round_trip_through_orbits_server() -> None:
    with trio.fail_after(GUARD):
        async with (
            orbit_server() as base,
            open_websocket(f"{base}/ws", max_message_bytes=LIMIT) as ws,
        ):
            assert ws.subprotocol is None
            for message in ["", "héllo ✓", "x" * 125, "y" * 126, "z" * 65536, "w" * 3_000_000]:
                await ws.send(message)
                assert await ws.receive() == message


async def test_many_tasks_sending_at_once_each_get_their_message_through_whole() -> None:
    got: list[dict[str, Any]] = []

    async def receive_all(ws: ClientWebSocket) -> None:  # read meanwhile: echoes fill buffers
        while len(got) < 200:
            got.append(json.loads(await ws.receive()))

    with trio.fail_after(GUARD):
        async with (
            orbit_server() as base,
            open_websocket(f"{base}/ws") as ws,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(receive_all, ws)
            for n in range(200):
                nursery.start_soon(ws.send, json.dumps({"n": n, "pad": "p" * (n * 37)}))
    assert sorted(m["n"] for m in got) == list(range(200))
    assert all(m["pad"] == "p" * (m["n"] * 37) for m in got)


async def test_a_send_from_a_cancelled_scope_raises_cancelled_and_sends_nothing() -> None:
    with trio.fail_after(GUARD):
        async with orbit_server() as base, open_websocket(f"{base}/ws") as ws:
            with trio.CancelScope() as scope:
                scope.cancel()
                await ws.send("never")
            assert scope.cancelled_caught
            await ws.send("after")
            assert await ws.receive() == "after"


async def test_a_message_larger_than_the_socket_takes_at_once_is_sent_whole_while_others_wait() -> (
    None
):
    big = "b" * 3_000_000  # over what a fresh loopback socket takes at once: the write waits

    async def receive_two(ws: ClientWebSocket, got: list[str]) -> None:
        got.append(await ws.receive())
        got.append(await ws.receive())

    got: list[str] = []
    with trio.fail_after(GUARD):
        async with (
            orbit_server() as base,
            open_websocket(f"{base}/ws", max_message_bytes=LIMIT) as ws,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(receive_two, ws, got)
            nursery.start_soon(ws.send, big)
            await wait_all_tasks_blocked()
            await ws.send("small")
    assert got == [big, "small"]


async def test_messages_queued_without_waiting_leave_in_one_write_before_the_next_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writes: list[bytes] = []
    send_now = DirectStream.send_now

    def counted(self: DirectStream, data: bytes | bytearray | memoryview) -> int:
        if not self.checks_cancel:  # the client's: the server here writes through the class too
            writes.append(bytes(data))
        return send_now(self, data)

    with trio.fail_after(GUARD):
        async with orbit_server() as base, open_websocket(f"{base}/ws") as ws:
            monkeypatch.setattr(DirectStream, "send_now", counted)
            ws.send_nowait("one")
            ws.send_nowait("two")
            assert writes == []  # nothing leaves until the receiving task reads
            assert await ws.receive() == "one"
            assert await ws.receive() == "two"
    assert len(writes[0]) == 2 * (6 + 3)  # both frames, in the first write


async def test_a_send_takes_the_queued_messages_along_ahead_of_its_own() -> None:
    with trio.fail_after(GUARD):
        async with orbit_server() as base, open_websocket(f"{base}/ws") as ws:
            ws.send_nowait("queued")
            await ws.send("sent")
            assert [await ws.receive(), await ws.receive()] == ["queued", "sent"]


async def test_queueing_on_a_closed_socket_raises_closed() -> None:
    with trio.fail_after(GUARD):
        async with orbit_server() as base, open_websocket(f"{base}/ws") as ws:
            await ws.aclose(1000, "done")
            with pytest.raises(WebSocketClosedError) as raised:
                ws.send_nowait("late")
    assert raised.value.code == 1000


async def test_the_bearer_header_reaches_the_server() -> None:
    with trio.fail_after(GUARD):
        async with orbit_server() as base:
            headers = [("Authorization", "Bearer s3cret")]
            async with open_websocket(f"{base}/ws", headers=headers) as ws:
                await ws.send("whoami")
                assert await ws.receive() == "Bearer s3cret"


async def test_a_close_from_the_server_raises_its_code_and_reason_on_receive_and_send() -> None:
    with trio.fail_after(GUARD):
        async with orbit_server() as base, open_websocket(f"{base}/ws") as ws:
            await ws.send("close 4000 session resumed elsewhere")
            with pytest.raises(WebSocketClosedError) as raised:
                await ws.receive()
            assert (raised.value.code, raised.value.reason) == (4000, "session resumed elsewhere")
            with pytest.raises(WebSocketClosedError, match="4000"):
                await ws.send("late")
            with pytest.raises(WebSocketClosedError):
                await ws.receive()


async def test_a_refusal_of_the_upgrade_is_a_handshake_error_with_the_status() -> None:
    with trio.fail_after(GUARD):
        async with orbit_server() as base:
            with pytest.raises(HandshakeError, match="403.*no socket here") as raised:
                await connect_websocket(f"{base}/elsewhere")
    assert raised.value.status == 403


async def test_closing_while_another_task_receives_ends_both_without_waiting_the_timeout() -> None:
    with trio.fail_after(GUARD):
        async with orbit_server() as base:
            ws = await connect_websocket(f"{base}/ws", close_timeout=60)
            outcome: list[int] = []

            async def receive() -> None:
                with pytest.raises(WebSocketClosedError) as raised:
                    await ws.receive()
                outcome.append(raised.value.code)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(receive)
                await wait_all_tasks_blocked()
                with pytest.raises(trio.BusyResourceError):
                    await ws.receive()
                await ws.aclose(1001, "going away")
    assert outcome == [1001]


async def test_tls_with_a_trusted_ca_works_and_an_untrusted_certificate_is_refused() -> None:
    authority = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    trusting = ssl.create_default_context()
    authority.configure_trust(trusting)
    with trio.fail_after(GUARD):
        async with orbit_server(server_context) as base:
            assert base.startswith("wss://")
            async with open_websocket(f"{base}/ws", ssl_context=trusting) as ws:
                await ws.send("over tls")
                assert await ws.receive() == "over tls"
            with pytest.raises(HandshakeError, match="CERTIFICATE_VERIFY_FAILED"):
                await connect_websocket(f"{base}/ws", ssl_context=ssl.create_default_context())


async def test_an_unreachable_server_is_an_os_error_and_a_bad_url_a_value_error() -> None:
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there now
    with trio.fail_after(GUARD), pytest.raises(OSError):
        await connect_websocket(f"ws://127.0.0.1:{port}/ws")
    with pytest.raises(ValueError, match="not a ws"):
        await connect_websocket("http://127.0.0.1/ws")


# -- against hand-written servers ----------------------------------------------------------
class Peer:
    """The server side of one raw connection: the handshake, then frames by hand."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.reader = FrameReader(LIMIT)  # the client's frames must be masked

    async def handshake(self, answer: Callable[[dict[str, str]], bytes] | None = None) -> None:
        buffer = b""
        while b"\r\n\r\n" not in buffer:
            buffer += await self.stream.receive_some(65536)
        head, _, rest = buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")[1:]
        headers = {k.lower(): v for k, _, v in (line.partition(": ") for line in lines)}
        self.reader.feed(rest)
        await self.stream.send_all(answer(headers) if answer else frames.accept_handshake(headers))

    async def next(self) -> object:
        """The client's next message or control frame; None at the end of the stream."""
        while (found := self.reader.next()) is None:
            data = await self.stream.receive_some(65536)
            if not data:
                return None
            self.reader.feed(data)
        return found

    async def raw_frame(self) -> tuple[int, bytes]:
        """The client's next frame as it is, pongs too (opcode, unmasked payload); only for
        short frames, with nothing left in :attr:`reader`."""
        data = b""
        while len(data) < 2 or len(data) < 6 + (data[1] & 0x7F):
            data += await self.stream.receive_some(1)
        assert data[1] & 0x80, "a client frame must be masked"
        return data[0] & 0x0F, frames.unmask(data[6:], data[2:6])


Script = Callable[[Peer], Awaitable[None]]


@asynccontextmanager
async def raw_server(script: Script) -> AsyncIterator[str]:
    """A server that runs ``script`` on each connection; yields its ws URL."""

    async def handler(stream: trio.SocketStream) -> None:
        await script(Peer(stream))

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(trio.serve_tcp, handler, 0)
        port = listeners[0].socket.getsockname()[1]
        yield f"ws://127.0.0.1:{port}/ws"
        nursery.cancel_scope.cancel()


async def closed_by(script: Script, **options: float) -> WebSocketClosedError:
    """Connect to a server running ``script`` and receive until the socket closes; returns
    once the script has finished too (it may still be reading what the client sent)."""
    finished = trio.Event()

    async def run(peer: Peer) -> None:
        try:
            await script(peer)
        finally:
            finished.set()

    with trio.fail_after(GUARD):
        async with raw_server(run) as url:
            ws: ClientWebSocket = await connect_websocket(url, **options)  # type: ignore[arg-type]
            try:
                with pytest.raises(WebSocketClosedError) as raised:
                    while True:
                        await ws.receive()
            finally:
                await ws.aclose()
            await finished.wait()
    return raised.value


async def test_fragments_with_a_ping_between_them_are_one_message_and_the_ping_is_answered() -> (
    None
):
    seen: list[object] = []

    async def script(peer: Peer) -> None:
        await peer.handshake()
        await peer.stream.send_all(
            frames.encode_frame(frames.TEXT, b"frag", fin=False)
            + frames.encode_frame(frames.PING, b"are you there")
            + frames.encode_frame(frames.CONTINUATION, b"ment", fin=False)
            + frames.encode_frame(frames.CONTINUATION, "é".encode())
        )
        seen.append(await peer.raw_frame())
        seen.append(await peer.next())
        await peer.stream.send_all(frames.encode_close(1000, ""))
        seen.append(await peer.next())

    with trio.fail_after(GUARD):
        async with raw_server(script) as url, open_websocket(url) as ws:
            assert await ws.receive() == "fragmenté"
            await ws.send("thanks")
            with pytest.raises(WebSocketClosedError) as raised:
                await ws.receive()
    assert raised.value.code == 1000
    assert seen == [(frames.PONG, b"are you there"), "thanks", Close(1000, "")]


async def test_frames_sent_with_the_101_in_one_write_are_not_lost() -> None:
    async def script(peer: Peer) -> None:
        await peer.handshake(
            lambda h: frames.accept_handshake(h) + frames.encode_frame(frames.TEXT, b"early")
        )
        await peer.next()

    with trio.fail_after(GUARD):
        async with raw_server(script) as url, open_websocket(url) as ws:
            assert await ws.receive() == "early"


async def test_a_message_over_the_limit_closes_with_1009_and_tells_the_server() -> None:
    answered: list[object] = []

    async def script(peer: Peer) -> None:
        await peer.handshake()
        await peer.stream.send_all(frames.encode_frame(frames.TEXT, b"x" * 2000))
        answered.append(await peer.next())

    closed = await closed_by(script, max_message_bytes=1000)
    assert closed.code == 1009
    assert answered == [Close(1009, "message over the size limit")]


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (frames.encode_masked_frame(frames.TEXT, b"masked", b"abcd"), 1002),
        (bytes([0x83, 0]), 1002),  # an unknown opcode
        (frames.encode_frame(frames.TEXT, b"\xff\xfe"), 1007),
        (frames.encode_frame(frames.BINARY, b"\x00"), 1003),
    ],
)
async def test_a_frame_breaking_a_rule_closes_with_the_code_rfc_6455_names(
    frame: bytes, code: int
) -> None:
    answered: list[object] = []

    async def script(peer: Peer) -> None:
        await peer.handshake()
        await peer.stream.send_all(frame)
        answered.append(await peer.next())

    assert (await closed_by(script)).code == code
    assert isinstance(answered[0], Close) and answered[0].code == code


async def test_a_server_that_drops_mid_frame_is_a_1006_close() -> None:
    async def script(peer: Peer) -> None:
        await peer.handshake()
        await peer.stream.send_all(frames.encode_frame(frames.TEXT, b"y" * 300)[:50])
        await peer.stream.aclose()

    closed = await closed_by(script)
    assert closed.code == 1006 and "without a close" in closed.reason


async def test_a_close_frame_without_a_code_is_answered_with_an_empty_one() -> None:
    answered: list[object] = []

    async def script(peer: Peer) -> None:
        await peer.handshake()
        await peer.stream.send_all(frames.encode_frame(frames.CLOSE, b""))
        answered.append(await peer.next())

    assert (await closed_by(script)).code == frames.NO_CODE
    assert answered == [Close(frames.NO_CODE, "")]


async def test_aclose_sends_its_code_and_waits_for_the_servers_answer() -> None:
    answered: list[object] = []

    async def script(peer: Peer) -> None:
        await peer.handshake()
        answered.append(await peer.next())
        await peer.stream.send_all(frames.encode_frame(frames.TEXT, b"ignored after close"))
        await peer.stream.send_all(frames.encode_close(4321, "bye"))
        answered.append(await peer.next())  # the end of the stream

    with trio.fail_after(GUARD):
        async with raw_server(script) as url:
            ws = await connect_websocket(url, close_timeout=60)
            await ws.aclose(4321, "bye")
            assert ws.close_reason is not None and ws.close_reason.code == 4321
            await ws.aclose()  # again: nothing happens
            with trio.fail_after(GUARD):
                while not answered[1:]:
                    await trio.sleep(0.01)
    assert answered == [Close(4321, "bye"), None]


def status_answer(status: str, body: bytes) -> Callable[[dict[str, str]], bytes]:
    return lambda _: (f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (status_answer("401 Unauthorized", b'{"message": "a worker token is required"}'),
         "401 Unauthorized.*worker token is required"),
        (status_answer("200 OK", b"just a page"), "200 OK: just a page"),
        (lambda h: frames.accept_handshake({**h, "sec-websocket-key": "AAAAAAAAAAAAAAAAAAAAAA=="}),
         "Accept does not match"),
        (lambda h: b"SSH-2.0-OpenSSH_9\r\n\r\n", "not HTTP"),
        (lambda h: b"HTTP/1.1 101 Switching Protocols\r\n" + b"X: y\r\n" * 20000, "over 64 KiB"),
    ],
)  # fmt: skip
async def test_a_wrong_answer_to_the_upgrade_is_a_handshake_error(
    answer: Callable[[dict[str, str]], bytes], why: str
) -> None:
    async def script(peer: Peer) -> None:
        await peer.handshake(answer)
        await peer.next()

    with trio.fail_after(GUARD):
        async with raw_server(script) as url:
            with pytest.raises(HandshakeError, match=why):
                await connect_websocket(url)


async def test_a_server_that_hangs_up_or_never_answers_is_a_handshake_error() -> None:
    async def hang_up(peer: Peer) -> None:
        await peer.stream.receive_some(65536)
        await peer.stream.aclose()

    async def silent(peer: Peer) -> None:
        await trio.sleep_forever()

    with trio.fail_after(GUARD):
        async with raw_server(hang_up) as url:
            with pytest.raises(HandshakeError, match="closed the connection instead of answering"):
                await connect_websocket(url)
        async with raw_server(silent) as url:
            with pytest.raises(HandshakeError, match="no WebSocket within 0.2 s"):
                await connect_websocket(url, connect_timeout=0.2)


async def test_the_subprotocol_the_server_picks_is_kept() -> None:
    def pick(headers: dict[str, str]) -> bytes:
        assert headers["sec-websocket-protocol"] == "orbit.v2, orbit.v1"
        answer = frames.accept_handshake(headers)
        return answer[:-2] + b"Sec-WebSocket-Protocol: orbit.v1\r\n\r\n"

    async def script(peer: Peer) -> None:
        await peer.handshake(pick)
        await peer.next()

    with trio.fail_after(GUARD):
        async with (
            raw_server(script) as url,
            open_websocket(url, subprotocols=["orbit.v2", "orbit.v1"]) as ws,
        ):
            assert ws.subprotocol == "orbit.v1"


async def test_the_receiving_task_reads_on_while_what_it_queued_waits_for_a_full_socket() -> None:
    """A server that reads nothing more until the client has read its next message must not
    deadlock the client: with ``flush_queued`` running, what ``send_nowait`` queued and the
    socket could not take at once leaves from that task, and the receiving task reads on (the
    server's gateway pauses reading while its own writes to the worker wait: a worker blocked
    the same way would hang both)."""
    queued = ["x" * 1000 + f"{n:06d}" for n in range(8000)]  # ~8 MB: more than the buffers hold
    released, received = trio.Event(), []

    async def script(peer: Peer) -> None:
        await peer.handshake()
        await peer.stream.send_all(frames.encode_text("go"))
        peer.reader.feed(await peer.stream.receive_some(1))  # the client began writing them...
        await peer.stream.send_all(frames.encode_text("after"))  # ...and must still read
        await released.wait()
        received.extend([await peer.next() for _ in queued])

    with trio.fail_after(GUARD):
        async with (
            raw_server(script) as url,
            open_websocket(url) as ws,
            trio.open_nursery() as nursery,
        ):
            await nursery.start(ws.flush_queued)
            assert await ws.receive() == "go"
            for message in queued:
                ws.send_nowait(message)
            assert await ws.receive() == "after"
            released.set()
            await ws.send("done")  # leaves after everything queued before it
            nursery.cancel_scope.cancel()
    assert received == queued
