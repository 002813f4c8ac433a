"""HTTP/2 on the transport, with httpx (h2) as the client: prior knowledge in clear and ALPN
over TLS, streams answered side by side, flow control for large answers, the body limit per
stream, protocol errors, idle connections and drain."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator

import h2.config
import h2.connection
import h2.events
import httpx
import trio
import trustme

from orbit_actors.http.application import Limits
from orbit_actors.http.transport import Server, open_listeners

from .test_transport import BIG, LIMIT, EchoApp, refusal, running


def h2_client(port: int) -> httpx.AsyncClient:
    """A client that speaks HTTP/2 only (prior knowledge on ``http://``)."""
    return httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", http1=False, http2=True)


async def test_a_client_with_prior_knowledge_is_answered_in_http2() -> None:
    async with running(EchoApp()) as (_, port), h2_client(port) as client:
        answer = await client.post("/echo?x=1&x=2", content=b"hello",
                                   headers={"content-type": "text/plain"})  # fmt: skip
        assert answer.http_version == "HTTP/2" and answer.status_code == 200
        assert answer.json() == {"method": "POST", "path": "/echo", "query": {"x": "1"},
                                 "body": "hello", "type": "text/plain"}  # fmt: skip


async def test_streams_are_answered_side_by_side_on_one_connection() -> None:
    app = EchoApp()
    async with running(app) as (_, port), h2_client(port) as client:
        answers: dict[str, int] = {}

        async def get(path: str) -> None:
            answers[path] = (await client.get(path)).status_code

        async with trio.open_nursery() as nursery:
            nursery.start_soon(get, "/slow")
            await app.slow_started.wait()
            for index in range(20):  # answered while /slow still waits
                await get(f"/quick{index}")
            assert len(answers) == 20
            app.release.set()
        assert answers["/slow"] == 200 and len(answers) == 21


async def test_an_answer_larger_than_the_flow_control_window_arrives_whole() -> None:
    async with running(EchoApp()) as (_, port), h2_client(port) as client:
        answers = [await client.get("/big") for _ in range(3)]
        assert all(len(answer.content) == BIG for answer in answers)


async def test_head_gets_the_headers_without_the_body() -> None:
    async with running(EchoApp()) as (_, port), h2_client(port) as client:
        answer = await client.head("/big")
        assert answer.status_code == 200 and answer.content == b""
        assert answer.headers["content-length"] == str(BIG)


async def test_a_body_over_the_limit_is_413_on_its_stream_and_the_connection_goes_on() -> None:
    async with running(EchoApp()) as (_, port), h2_client(port) as client:
        refused = await client.post("/echo", content=b"x" * (LIMIT + 1))
        assert refused.status_code == 413
        assert refused.json()["message"] == "the request body is over the server's limit"

        async def chunks() -> AsyncIterator[bytes]:  # no content-length: counted as it comes
            for _ in range(4):
                yield b"y" * 400

        assert (await client.post("/echo", content=chunks())).status_code == 413
        assert (await client.post("/echo", content=b"small")).json()["body"] == "small"


async def test_alpn_h2_over_tls_is_answered_in_http2() -> None:
    authority = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    server_context.set_alpn_protocols(["h2", "http/1.1"])
    client_context = ssl.create_default_context()
    authority.configure_trust(client_context)
    server = Server(EchoApp(), Limits(LIMIT, LIMIT), refusal)
    listeners, urls = await open_listeners("127.0.0.1:0", server_context)
    async with trio.open_nursery() as connections:
        await connections.start(server.serve, listeners, connections)
        async with httpx.AsyncClient(http2=True, verify=client_context) as client:
            answer = await client.get(f"{urls[0]}/tls")
            assert answer.http_version == "HTTP/2" and answer.json()["path"] == "/tls"
            plain = await httpx.AsyncClient(verify=client_context).get(f"{urls[0]}/old")
            assert plain.http_version == "HTTP/1.1" and plain.status_code == 200
        connections.cancel_scope.cancel()


class RawH2:
    """An HTTP/2 client connection driven frame by frame."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))

    @classmethod
    async def open(cls, port: int) -> RawH2:
        client = cls(await trio.open_tcp_stream("127.0.0.1", port))
        client.h2.initiate_connection()
        await client.stream.send_all(client.h2.data_to_send())
        return client

    async def events(self) -> list[h2.events.Event]:
        """Events until the server closes, or none for half a second."""
        found: list[h2.events.Event] = []
        with trio.move_on_after(0.5):
            while data := await self.stream.receive_some(65536):
                found += self.h2.receive_data(data)
                await self.stream.send_all(self.h2.data_to_send())
        return found


async def test_a_protocol_error_ends_the_connection_with_goaway_and_the_server_goes_on() -> None:
    async with running(EchoApp()) as (_, port):
        client = await RawH2.open(port)
        await client.stream.send_all(b"\x00\x00\x05\x07\x00\x00\x00\x00\x01garbage" * 3)
        events = await client.events()
        assert any(isinstance(event, h2.events.ConnectionTerminated) for event in events)
        async with h2_client(port) as fresh:
            assert (await fresh.get("/after")).status_code == 200


async def test_an_idle_connection_is_closed_with_goaway_after_the_keep_alive_timeout() -> None:
    async with running(EchoApp(), keep_alive=0.2) as (_, port):
        client = await RawH2.open(port)
        with trio.fail_after(5):
            while not any(
                isinstance(event, h2.events.ConnectionTerminated) for event in await client.events()
            ):
                pass


async def test_a_drain_lets_the_stream_in_flight_finish_then_says_goaway() -> None:
    app = EchoApp()
    async with running(app) as (server, port):
        client = await RawH2.open(port)
        client.h2.send_headers(1, [(":method", "GET"), (":path", "/slow"), (":scheme", "http"),
                                   (":authority", "x")], end_stream=True)  # fmt: skip
        await client.stream.send_all(client.h2.data_to_send())
        await app.slow_started.wait()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.drain, 5.0)
            await trio.sleep(0.1)
            app.release.set()
            events = await client.events()
        answered = [e for e in events if isinstance(e, h2.events.ResponseReceived)]
        assert answered and dict(answered[0].headers)[b":status"] == b"200"
        assert isinstance(events[-1], h2.events.ConnectionTerminated)
        assert json.loads(b"".join(
            e.data for e in events if isinstance(e, h2.events.DataReceived) and e.data
        ))["path"] == "/slow"  # fmt: skip
