"""The server's listening socket accepted from directly (``DirectListener`` in
``http/direct_stream.py``): connections already waiting are taken without a trip through the
scheduler, yet a flood of them still lets the other tasks run, a cancelled accept raises, and
a closed listener is a closed resource."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

from orbit_actors.http.direct_stream import (
    CALLS_BEFORE_A_CHECKPOINT,
    DirectListener,
    DirectStream,
)

GUARD = 20  # seconds: a hang guard, never a speed assertion


@pytest.fixture
async def listener() -> AsyncIterator[DirectListener]:
    """A direct listener on a loopback port; closed after the test."""
    plain = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    direct = DirectListener.over(plain)
    assert isinstance(direct, DirectListener)
    async with direct:
        yield direct


def connect(listener: DirectListener) -> socket.socket:
    """A client connected to ``listener`` (waiting in its backlog until accepted)."""
    return socket.create_connection(listener.listener.socket.getsockname()[:2])


async def test_an_accepted_connection_carries_bytes_both_ways(listener: DirectListener) -> None:
    client = connect(listener)
    with trio.fail_after(GUARD):
        stream = await listener.accept()
        client.sendall(b"ping")
        assert await stream.receive_some(64) == b"ping"
        await stream.send_all(b"pong")
    assert client.recv(64) == b"pong"
    client.close()
    await stream.aclose()


async def test_an_accepted_connection_is_set_up_as_trio_sets_one_up(
    listener: DirectListener,
) -> None:
    client = connect(listener)
    with trio.fail_after(GUARD):
        stream = await listener.accept()
    sock = stream.socket
    assert isinstance(sock, socket.socket)  # the standard library's, without trio's wrappers
    assert not sock.getblocking()
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT) == 2**14
    client.close()
    stream.close()


async def test_an_accepted_connection_half_closes_and_closes(listener: DirectListener) -> None:
    client = connect(listener)
    with trio.fail_after(GUARD):
        stream = await listener.accept()
        await stream.send_all(b"bye")
        await stream.send_eof()  # the client reads the end; reading goes on
        assert client.recv(64) == b"bye"
        assert client.recv(64) == b""
        client.sendall(b"still")
        assert await stream.receive_some(64) == b"still"
        await stream.aclose()
    assert stream.socket.fileno() == -1
    client.close()


async def test_closing_an_accepted_connection_wakes_its_reader(listener: DirectListener) -> None:
    client = connect(listener)
    with trio.fail_after(GUARD):
        stream = await listener.accept()

        async def close_soon() -> None:
            await trio.sleep(0.01)
            stream.close()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(close_soon)
            with pytest.raises(trio.ClosedResourceError):
                await stream.receive_some(64)
    client.close()


async def test_an_accept_waits_for_a_connection(listener: DirectListener) -> None:
    clients: list[socket.socket] = []

    async def connect_later() -> None:
        await trio.sleep(0.01)
        clients.append(connect(listener))

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(connect_later)
            stream = await listener.accept()
    assert stream.socket.getpeername() == clients[0].getsockname()
    clients[0].close()
    await stream.aclose()


async def test_a_flood_of_waiting_connections_lets_other_tasks_run(
    listener: DirectListener,
) -> None:
    count = 3 * CALLS_BEFORE_A_CHECKPOINT
    clients = [connect(listener) for _ in range(count)]
    accepted: list[DirectStream] = []
    seen_at: list[int] = []

    async def other() -> None:
        seen_at.append(len(accepted))

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(other)  # runs once the accepting task gives the scheduler a turn
            for _ in range(count):
                accepted.append(await listener.accept())
    assert seen_at[0] < count and seen_at[0] % CALLS_BEFORE_A_CHECKPOINT == 0
    for client, stream in zip(clients, accepted, strict=True):
        client.close()
        await stream.aclose()


async def test_an_accept_in_a_cancelled_scope_raises_even_with_a_connection_waiting(
    listener: DirectListener,
) -> None:
    client = connect(listener)
    with trio.CancelScope() as scope:
        scope.cancel()
        await listener.accept()
    assert scope.cancelled_caught
    with trio.fail_after(GUARD):
        stream = await listener.accept()  # still there
    client.close()
    await stream.aclose()


async def test_a_closed_listener_accepts_nothing_more() -> None:
    plain = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    address = plain.socket.getsockname()[:2]
    direct = DirectListener.over(plain)
    assert isinstance(direct, DirectListener)
    await direct.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await direct.accept()
    with pytest.raises(ConnectionRefusedError):  # both descriptors closed: nobody listens
        socket.create_connection(address)


async def test_only_a_plain_socket_listener_accepts_directly() -> None:
    left, right = trio.testing.memory_stream_pair()

    class OneStream(trio.abc.Listener[trio.abc.Stream]):
        async def accept(self) -> trio.abc.Stream:
            return left

        async def aclose(self) -> None:
            await left.aclose()

    other = OneStream()
    assert DirectListener.over(other) is other
    await other.aclose()
    await right.aclose()
