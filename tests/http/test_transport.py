"""The HTTP/1.1 and WebSocket transport on a real loopback socket, with a small application:
keep-alive, limits, malformed requests, drain, and WebSocket framing rules."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import h11
import pytest
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Message,
    Ping,
    Pong,
    TextMessage,
)
from wsproto.events import (
    Request as WsRequest,
)

from orbit_actors.http.application import Limits, ServerSocket
from orbit_actors.http.http1 import Request, Response
from orbit_actors.http.transport import Server, open_listeners
from orbit_actors.http.websocket import SocketClosed

LIMIT = 1000
BIG = 300_000  # over HTTP/2's initial flow-control window (65,535 bytes)


class EchoApp:
    """Answers with what it was asked; ``/slow`` waits to be released; ``/big`` is
    :data:`BIG` bytes; WebSocket messages are echoed."""

    def __init__(self) -> None:
        self.release = trio.Event()
        self.slow_started = trio.Event()

    async def respond(self, request: Request) -> Response:
        if request.path == "/slow":
            self.slow_started.set()
            await self.release.wait()
        if request.path == "/big":
            return Response(200, b"x" * BIG, content_type="text/plain")
        body = {"method": request.method, "path": request.path, "query": request.query,
                "body": request.body.decode(), "type": request.content_type}  # fmt: skip
        return Response(200, json.dumps(body).encode())

    async def websocket(self, request: Request, socket: ServerSocket) -> Response | None:
        if request.path != "/ws":
            return Response(401, b'{"refused": true}')
        await socket.accept()
        try:
            while True:
                message = await socket.receive()
                assert isinstance(message, str)
                await socket.send_utf8(message.encode())
        except SocketClosed:
            return None


def upgrade(
    key: str | None = "dGhlIHNhbXBsZSBub25jZQ==", version: str = "13"
) -> tuple[tuple[str, str], ...]:
    """The headers of a WebSocket handshake (without the key when ``key`` is None)."""
    keyed = (("sec-websocket-key", key),) if key is not None else ()
    return (("upgrade", "websocket"), ("connection", "Upgrade"), *keyed,
            ("sec-websocket-version", version))  # fmt: skip


def refusal(status: int, message: str) -> Response:
    return Response(status, json.dumps({"status": status, "message": message}).encode())


@asynccontextmanager
async def running(
    app: EchoApp, keep_alive: float = 75.0, limits: Limits | None = None
) -> AsyncIterator[tuple[Server, int]]:
    server = Server(app, limits or Limits(LIMIT, LIMIT, keep_alive), refusal)
    listeners, urls = await open_listeners("127.0.0.1:0", None)
    async with trio.open_nursery() as connections:
        await connections.start(server.serve, listeners, connections)
        yield server, int(urls[0].rsplit(":", 1)[1])
        connections.cancel_scope.cancel()


class Client:
    """One raw HTTP/1.1 client connection."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.CLIENT)

    @classmethod
    async def open(cls, port: int) -> Client:
        return cls(await trio.open_tcp_stream("127.0.0.1", port))

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: tuple[tuple[str, str], ...] = ()
    ) -> tuple[h11.Response, bytes]:
        all_headers = [("host", "test"), ("content-length", str(len(body))), *headers]
        data = self.h11.send(h11.Request(method=method, target=path, headers=all_headers))
        data += self.h11.send(h11.Data(data=body)) + self.h11.send(h11.EndOfMessage())
        await self.stream.send_all(data)
        return await self.response()

    async def response(self) -> tuple[h11.Response, bytes]:
        head: h11.Response | None = None
        body = b""
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                self.h11.receive_data(await self.stream.receive_some(65536))
            elif isinstance(event, h11.Response):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                if self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE:
                    self.h11.start_next_cycle()
                return head, body
            elif isinstance(event, h11.ConnectionClosed):
                raise AssertionError("the server closed the connection without an answer")

    async def closed(self) -> bool:
        """True once the server has closed the connection."""
        with trio.fail_after(10):
            try:
                return await self.stream.receive_some(65536) == b""
            except trio.BrokenResourceError:
                return True


def header(response: h11.Response, name: str) -> str | None:
    for key, value in response.headers:
        if key.decode() == name:
            return value.decode()
    return None


async def test_one_connection_carries_many_requests() -> None:
    async with running(EchoApp()) as (_, port):
        client = await Client.open(port)
        for n in range(3):
            response, body = await client.request("POST", f"/items/a%20b?n={n}&n=9", b"hi")
            assert response.status_code == 200
            assert json.loads(body) == {"method": "POST", "path": "/items/a b",
                                        "query": {"n": str(n)}, "body": "hi", "type": ""}  # fmt: skip


async def test_an_answer_the_socket_takes_in_parts_arrives_whole_and_the_connection_goes_on() -> (
    None
):
    async with running(EchoApp()) as (_, port):
        client = await Client.open(port)
        client.stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        for _ in range(2):  # a plain request: its answer cannot leave in one write
            with trio.fail_after(10):
                response, body = await client.request("GET", "/big")
            assert response.status_code == 200 and body == b"x" * BIG
        assert (await client.request("GET", "/after"))[0].status_code == 200


async def test_a_declared_body_over_the_limit_is_413_before_it_is_read_and_closes() -> None:
    async with running(EchoApp()) as (_, port):
        client = await Client.open(port)
        head = f"POST /x HTTP/1.1\r\nhost: t\r\ncontent-length: {LIMIT + 1}\r\n\r\n".encode()
        await client.stream.send_all(head)
        response, body = await client.response()
        assert response.status_code == 413
        assert header(response, "connection") == "close"
        assert json.loads(body)["message"] == "the request body is over the server's limit"
        assert await client.closed()


async def test_a_chunked_body_growing_over_the_limit_is_413() -> None:
    async with running(EchoApp()) as (_, port):
        client = await Client.open(port)
        head = b"POST /x HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n"
        chunk = b"%x\r\n%s\r\n" % (600, b"x" * 600)
        await client.stream.send_all(head + chunk + chunk)
        response, _ = await client.response()
        assert response.status_code == 413


async def test_a_head_over_the_limit_is_431() -> None:
    async with running(EchoApp()) as (_, port):
        client = await Client.open(port)
        await client.stream.send_all(b"GET /x HTTP/1.1\r\nhost: t\r\nx-big: " + b"a" * 70000)
        response, _ = await client.response()
        assert response.status_code == 431
        assert await client.closed()


async def test_a_malformed_request_is_400_and_closes_only_its_connection() -> None:
    async with running(EchoApp()) as (_, port):
        other = await Client.open(port)
        client = await Client.open(port)
        await client.stream.send_all(b"NOT HTTP AT ALL\r\n\r\n")
        response, body = await client.response()
        assert response.status_code == 400
        assert "malformed HTTP request" in json.loads(body)["message"]
        assert await client.closed()
        assert (await other.request("GET", "/still-here"))[0].status_code == 200


async def test_expect_100_continue_is_answered_before_the_body() -> None:
    async with running(EchoApp()) as (_, port):
        client = await Client.open(port)
        head = b"POST /x HTTP/1.1\r\nhost: t\r\ncontent-length: 2\r\nexpect: 100-continue\r\n\r\n"
        await client.stream.send_all(head)
        assert (await client.stream.receive_some(65536)).startswith(b"HTTP/1.1 100 ")
        await client.stream.send_all(b"ok")
        response, body = await client.response()
        assert response.status_code == 200 and json.loads(body)["body"] == "ok"


async def test_an_idle_connection_is_closed_after_the_keep_alive_timeout() -> None:
    async with running(EchoApp(), keep_alive=0.2) as (_, port):
        client = await Client.open(port)
        assert (await client.request("GET", "/x"))[0].status_code == 200
        assert await client.closed()


async def test_serving_ends_once_accepting_stopped_and_the_last_connection_ended() -> None:
    server = Server(EchoApp(), Limits(LIMIT, LIMIT), refusal)
    listeners, urls = await open_listeners("127.0.0.1:0", None)
    with trio.fail_after(10):
        async with trio.open_nursery() as connections:
            await connections.start(server.serve, listeners, connections)
            client = await Client.open(int(urls[0].rsplit(":", 1)[1]))
            assert (await client.request("GET", "/x"))[0].status_code == 200
            server.stop_accepting()
            await client.stream.aclose()  # the keep-alive sweeper does not outlive it


async def test_drain_closes_idle_connections_and_finishes_requests_in_flight() -> None:
    app = EchoApp()
    async with running(app) as (server, port):
        idle = await Client.open(port)
        assert (await idle.request("GET", "/x"))[0].status_code == 200
        busy = await Client.open(port)
        answers: list[h11.Response] = []

        async def ask_slow() -> None:
            answers.append((await busy.request("GET", "/slow"))[0])

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask_slow)
            await app.slow_started.wait()
            nursery.start_soon(server.drain, 10.0)
            assert await idle.closed()
            app.release.set()
        assert answers[0].status_code == 200
        assert header(answers[0], "connection") == "close"
        assert await busy.closed()
        with pytest.raises(OSError):
            await Client.open(port)


class WsClient:
    """One raw WebSocket client connection."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.ws = WSConnection(ConnectionType.CLIENT)

    @classmethod
    async def open(cls, port: int, path: str = "/ws") -> tuple[WsClient, object]:
        client = cls(await trio.open_tcp_stream("127.0.0.1", port))
        await client.stream.send_all(client.ws.send(WsRequest(host="test", target=path)))
        return client, await client.next_event()

    async def next_event(self) -> object:
        with trio.fail_after(10):
            while True:
                for event in self.ws.events():
                    return event
                data = await self.stream.receive_some(65536)
                self.ws.receive_data(data or None)

    async def send(self, event: object) -> None:
        await self.stream.send_all(self.ws.send(event))  # type: ignore[arg-type]


async def test_a_websocket_echoes_messages_sent_in_fragments_and_answers_pings() -> None:
    async with running(EchoApp()) as (_, port):
        client, accepted = await WsClient.open(port)
        assert isinstance(accepted, AcceptConnection)
        await client.send(Message(data="hel", message_finished=False))
        await client.send(Message(data="lo"))
        echoed = await client.next_event()
        assert isinstance(echoed, TextMessage) and echoed.data == "hello"
        await client.send(Ping(b"are you there"))
        pong = await client.next_event()
        assert isinstance(pong, Pong) and pong.payload == b"are you there"


async def test_a_websocket_upgrade_after_plain_requests_on_one_connection_is_served() -> None:
    async with running(EchoApp()) as (_, port):
        plain = await Client.open(port)
        for _ in range(2):  # answered plainly (no cancel scope yet)
            assert (await plain.request("GET", "/x"))[0].status_code == 200
        client = WsClient(plain.stream)  # the same connection goes on as a WebSocket
        await client.send(WsRequest(host="test", target="/ws"))
        assert isinstance(await client.next_event(), AcceptConnection)
        await client.send(Message(data="hello"))
        echoed = await client.next_event()
        assert isinstance(echoed, TextMessage) and echoed.data == "hello"


async def test_a_websocket_message_over_the_limit_closes_with_1009() -> None:
    async with running(EchoApp()) as (_, port):
        client, _ = await WsClient.open(port)
        await client.send(Message(data="x" * 600, message_finished=False))
        await client.send(Message(data="x" * 600))
        closed = await client.next_event()
        assert isinstance(closed, CloseConnection) and closed.code == 1009


async def test_a_websocket_close_from_the_client_is_answered() -> None:
    async with running(EchoApp()) as (_, port):
        client, _ = await WsClient.open(port)
        await client.send(CloseConnection(code=1000, reason="bye"))
        answer = await client.next_event()
        assert isinstance(answer, CloseConnection) and answer.code == 1000


async def test_a_refused_upgrade_is_an_http_answer() -> None:
    async with running(EchoApp()) as (_, port):
        client = await Client.open(port)
        response, body = await client.request("GET", "/refused", headers=upgrade())
        assert response.status_code == 401 and json.loads(body) == {"refused": True}


async def test_head_answers_the_get_headers_without_a_body() -> None:
    async with running(EchoApp()) as (_, port):
        client = await Client.open(port)
        response, body = await client.request("HEAD", "/x")
        assert response.status_code == 200 and body == b""
        assert int(header(response, "content-length") or 0) > 0
        assert (await client.request("GET", "/again"))[0].status_code == 200


async def test_an_upgrade_without_a_key_is_400() -> None:
    async with running(EchoApp()) as (_, port):
        client = await Client.open(port)
        response, body = await client.request("GET", "/ws", headers=upgrade(key=None))
        assert response.status_code == 400
        assert json.loads(body)["message"].startswith("not a valid WebSocket handshake")


async def test_pipelined_requests_are_answered_in_order() -> None:
    async with running(EchoApp()) as (_, port):
        client = await Client.open(port)
        one = b"GET /one HTTP/1.1\r\nhost: t\r\n\r\n"
        two = b"POST /two HTTP/1.1\r\nhost: t\r\ncontent-length: 1\r\n\r\nx"
        await client.stream.send_all(one + two)
        raw = b""
        with trio.fail_after(10):
            while raw.count(b"HTTP/1.1 200 OK") < 2 or not raw.endswith(b"}"):
                raw += await client.stream.receive_some(65536)
        assert 0 < raw.index(b'"path": "/one"') < raw.index(b'"path": "/two"')


async def test_an_http_1_0_request_gets_one_answer_and_a_close() -> None:
    async with running(EchoApp()) as (_, port):
        client = await Client.open(port)
        await client.stream.send_all(b"GET /old HTTP/1.0\r\n\r\n")
        raw = b""
        with trio.fail_after(10):
            while chunk := await client.stream.receive_some(65536):
                raw += chunk
        assert raw.startswith(b"HTTP/1.1 200 OK\r\n")
        assert b"connection: close\r\n" in raw and raw.endswith(b'"type": ""}')


async def test_an_upgrade_to_another_protocol_is_answered_in_http_1_1_with_its_body() -> None:
    async with running(EchoApp()) as (_, port):
        client = await Client.open(port)
        h2c = (("connection", "Upgrade, HTTP2-Settings"), ("upgrade", "h2c"),
               ("http2-settings", "AAMAAABkAARAAAAAAAIAAAAA"))  # fmt: skip
        response, body = await client.request("POST", "/x", b"hello", headers=h2c)
        assert response.status_code == 200 and json.loads(body)["body"] == "hello"
        assert header(response, "connection") == "close"


async def test_an_upgrade_whose_length_has_thousands_of_leading_zeros_is_read_by_its_value() -> (
    None
):
    async with running(EchoApp()) as (_, port):
        client = await Client.open(port)
        length = "0" * 5000 + "5"  # llhttp takes it as 5; int() refuses over 4,300 digits
        await client.stream.send_all(
            b"POST /x HTTP/1.1\r\nhost: t\r\nconnection: Upgrade, HTTP2-Settings\r\n"
            b"upgrade: h2c\r\nhttp2-settings: AAMAAABkAARAAAAAAAIAAAAA\r\n"
            b"content-length: " + length.encode() + b"\r\n\r\nhello"
        )
        raw = b""
        with trio.fail_after(10):
            while chunk := await client.stream.receive_some(65536):
                raw += chunk
        assert raw.startswith(b"HTTP/1.1 200 OK\r\n") and b'"body": "hello"' in raw


def test_a_head_and_a_large_body_arriving_together_are_judged_apart() -> None:
    from orbit_actors.http.http1 import Refusal, RequestReader

    reader = RequestReader(100)
    head = b"POST /x HTTP/1.1\r\nhost: t\r\ncontent-length: 200000\r\n\r\n"
    with pytest.raises(Refusal) as refused:
        reader.feed(head + b"x" * 65000)
    assert refused.value.status == 413


async def test_an_upgrade_to_another_websocket_version_is_426_naming_version_13() -> None:
    async with running(EchoApp()) as (_, port):
        client = await Client.open(port)
        response, _ = await client.request("GET", "/ws", headers=upgrade(version="8"))
        assert response.status_code == 426
        assert header(response, "sec-websocket-version") == "13"


async def test_a_frame_announcing_too_much_is_closed_with_1009_before_its_payload() -> None:
    async with running(EchoApp()) as (_, port):
        client, _ = await WsClient.open(port)
        frame = client.ws.send(Message(data="x" * 50_000))
        await client.stream.send_all(frame[:20])  # the header says 50,000 bytes; none follow
        closed = await client.next_event()
        assert isinstance(closed, CloseConnection) and closed.code == 1009
        await client.stream.send_all(frame[20:] + client.ws.send(closed.response()))
        assert await client.stream.receive_some(100) == b""  # closed once the client answered
