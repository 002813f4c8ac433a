"""A WebSocket message sent at once (``WebSocket.send_at_once``, the gateway's path when its
writer is idle): written without waiting on a plain socket, and when the socket takes only part
of it, the rest leaves before anything sent after it (a message, or the pong the reading task
answers with)."""

from __future__ import annotations

import trio
from wsproto.events import Ping, Pong, TextMessage

from orbit_actors.http.application import ServerSocket
from orbit_actors.http.http1 import Request, Response
from orbit_actors.http.websocket import SocketClosed

from .test_transport import WsClient, running

HUGE = "h" * 8_000_000  # more than the socket buffers hold: the socket takes it in part


class AtOnceApp:
    """Sends :data:`HUGE` at once, then ``next`` with ``send``, answering pings meanwhile."""

    def __init__(self) -> None:
        self.taken_in_part: bool | None = None

    async def respond(self, request: Request) -> Response:
        return Response(404, b"{}")

    async def websocket(self, request: Request, socket: ServerSocket) -> Response | None:
        await socket.accept()
        assert socket.send_at_once(HUGE)
        self.taken_in_part = socket.unsent
        async with trio.open_nursery() as nursery:
            nursery.start_soon(receive_all, socket)
            await socket.send("next")
        return None


async def receive_all(socket: ServerSocket) -> None:
    try:
        while True:
            await socket.receive()
    except SocketClosed:
        return


async def next_whole(client: WsClient) -> object:
    """The next event, a text message joined from its pieces."""
    event = await client.next_event()
    text = ""
    while isinstance(event, TextMessage):
        text += event.data
        if event.message_finished:
            return TextMessage(text)
        event = await client.next_event()
    return event


async def test_the_rest_of_a_message_sent_at_once_leaves_before_what_follows() -> None:
    app = AtOnceApp()
    async with running(app) as (_, port):  # type: ignore[arg-type]
        client, _ = await WsClient.open(port)
        await client.send(Ping(b"still there?"))
        events = [await next_whole(client) for _ in range(3)]
        assert app.taken_in_part
        first = events[0]
        assert isinstance(first, TextMessage) and first.data == HUGE
        assert any(isinstance(e, TextMessage) and e.data == "next" for e in events[1:])
        assert any(isinstance(e, Pong) and e.payload == b"still there?" for e in events[1:])


class SmallApp(AtOnceApp):
    """Sends one small message at once and reports what happened."""

    async def websocket(self, request: Request, socket: ServerSocket) -> Response | None:
        await socket.accept()
        assert socket.send_at_once("a", "b")
        self.taken_in_part = socket.unsent
        await receive_all(socket)
        return None


async def test_small_messages_sent_at_once_leave_whole_and_in_order() -> None:
    app = SmallApp()
    async with running(app) as (_, port):  # type: ignore[arg-type]
        client, _ = await WsClient.open(port)
        events = [await next_whole(client) for _ in range(2)]
        assert app.taken_in_part is False
        assert [e.data for e in events if isinstance(e, TextMessage)] == ["a", "b"]
