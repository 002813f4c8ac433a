"""A plain TCP socket read and written directly (``http/direct_stream.py``), as the server uses
it: it waits only when the socket is empty or full, still lets the other tasks run now and
then, still honours cancellation, and fails as trio's ``SocketStream`` does. The worker's use
(``checks_cancel=False``) is in ``test_client_direct.py``."""

from __future__ import annotations

import os
import socket

import pytest
import trio
import trio.testing

from orbit_actors.http.direct_stream import CALLS_BEFORE_A_CHECKPOINT, DirectStream

GUARD = 20  # seconds: a hang guard, never a speed assertion


Pair = tuple[DirectStream, trio.socket.SocketType]


@pytest.fixture(params=[True, False], ids=["server", "worker"])
def either(
    socket_pair: tuple[trio.SocketStream, trio.socket.SocketType], request: pytest.FixtureRequest
) -> Pair:
    """Ours read directly, as the server does (checking for cancellation) and as the worker
    does (not on a read that finds data); and the peer's socket."""
    stream, theirs = socket_pair
    direct = DirectStream.of(stream, checks_cancel=request.param)
    assert direct is not None
    return direct, theirs


@pytest.fixture
def pair(socket_pair: tuple[trio.SocketStream, trio.socket.SocketType]) -> Pair:
    """Ours read directly as the server does, and the peer's socket."""
    stream, theirs = socket_pair
    direct = DirectStream.over(stream)
    assert isinstance(direct, DirectStream)
    return direct, theirs


async def test_a_reader_that_always_finds_data_lets_other_tasks_run(either: Pair) -> None:
    direct, theirs = either
    chunks = 3 * CALLS_BEFORE_A_CHECKPOINT
    await theirs.send(b"x" * 64 * chunks)  # all there before the first read
    reads = 0
    seen_at: list[int] = []

    async def other() -> None:
        seen_at.append(reads)

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(other)  # runs once this task gives the scheduler a turn
            for _ in range(chunks):
                assert await direct.receive_some(64) == b"x" * 64
                reads += 1
    # a turn every CALLS_BEFORE_A_CHECKPOINT reads (trio picks which runnable task goes first)
    assert seen_at[0] < chunks and seen_at[0] % CALLS_BEFORE_A_CHECKPOINT == 0


async def test_a_writer_that_always_has_room_lets_other_tasks_run(either: Pair) -> None:
    direct, _ = either
    chunks = 3 * CALLS_BEFORE_A_CHECKPOINT
    writes = 0
    seen_at: list[int] = []

    async def other() -> None:
        seen_at.append(writes)

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(other)
            for _ in range(chunks):
                await direct.send_all(b"y")
                writes += 1
    assert seen_at[0] < chunks and seen_at[0] % CALLS_BEFORE_A_CHECKPOINT == 0


async def test_a_read_in_a_cancelled_scope_raises_even_with_data_waiting(pair: Pair) -> None:
    direct, theirs = pair
    await theirs.send(b"late")
    with trio.CancelScope() as scope:
        scope.cancel()
        await direct.receive_some(64)
    assert scope.cancelled_caught
    assert await direct.receive_some(64) == b"late"  # nothing was lost


async def test_a_read_waits_for_data_and_ends_with_the_peer(pair: Pair) -> None:
    direct, theirs = pair

    async def send_later() -> None:
        await trio.sleep(0.01)
        await theirs.send(b"hello")
        theirs.close()

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(send_later)
            assert await direct.receive_some() == b"hello"
            assert await direct.receive_some() == b""


async def test_a_read_now_takes_what_is_there_none_when_empty_and_ends_with_the_peer(
    pair: Pair,
) -> None:
    direct, theirs = pair
    assert direct.receive_now(64) is None
    await theirs.send(b"here")  # a socket pair: in ours as soon as it is sent
    assert direct.receive_now(64) == b"here"
    theirs.close()
    assert direct.receive_now(64) == b""
    direct.close()
    with pytest.raises(trio.ClosedResourceError):
        direct.receive_now(64)


async def test_a_read_after_an_answer_waits_for_data_and_ends_with_the_peer(pair: Pair) -> None:
    direct, theirs = pair

    async def send_later() -> None:
        await trio.sleep(0.01)
        await theirs.send(b"next")
        await trio.sleep(0.01)
        theirs.close()

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(send_later)
            assert await direct.receive_when_readable(64) == b"next"
            assert await direct.receive_when_readable(64) == b""


async def test_a_read_after_an_answer_takes_data_already_there(pair: Pair) -> None:
    direct, theirs = pair
    await theirs.send(b"pipelined")
    with trio.fail_after(GUARD):
        assert await direct.receive_when_readable(64) == b"pipelined"


async def test_a_read_after_an_answer_is_cancellable_and_ends_on_a_close(pair: Pair) -> None:
    direct, _ = pair
    with trio.move_on_after(0.01) as scope:
        await direct.receive_when_readable(64)
    assert scope.cancelled_caught

    async def close_soon() -> None:
        await trio.sleep(0.01)
        direct.close()

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(close_soon)
            with pytest.raises(trio.ClosedResourceError):
                await direct.receive_when_readable(64)


async def test_a_write_to_a_full_socket_waits_and_arrives_whole_in_order(pair: Pair) -> None:
    direct, theirs = pair
    data = bytes(range(256)) * 40_000  # ~10 MB: more than the socket buffers hold
    received = bytearray()

    async def read_all() -> None:
        while len(received) < len(data):
            received.extend(await theirs.recv(1 << 16))

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_all)
            await direct.send_all(data)
    assert received == data


async def test_send_now_takes_what_fits_and_zero_when_full(pair: Pair) -> None:
    direct, _ = pair
    taken = [direct.send_now(b"z" * (1 << 20)) for _ in range(64)]
    assert taken[0] > 0 and taken[-1] == 0


async def test_a_closed_socket_is_a_closed_resource_even_for_a_waiting_reader(pair: Pair) -> None:
    direct, _ = pair

    async def close_soon() -> None:
        await trio.sleep(0.01)
        await direct.aclose()

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(close_soon)
            with pytest.raises(trio.ClosedResourceError):
                await direct.receive_some(64)
    with pytest.raises(trio.ClosedResourceError):
        await direct.send_all(b"x")


async def test_a_peer_that_vanished_is_a_broken_resource(pair: Pair) -> None:
    direct, theirs = pair
    theirs.close()
    with pytest.raises(trio.BrokenResourceError):
        for _ in range(8):  # the first write may still be taken by the kernel
            await direct.send_all(b"x" * 65536)


async def test_only_a_plain_socket_is_read_directly() -> None:
    left, right = trio.testing.memory_stream_pair()
    assert DirectStream.over(left) is left
    await left.aclose()
    await right.aclose()


async def test_a_socket_closed_without_telling_trio_leaves_its_number_to_the_next_one(
    pair: Pair,
) -> None:
    """``close(waited_on=False)`` (a connection's last task closing its socket): a socket that
    was waited on, closed so, then its descriptor number given to a new socket, which is
    waited on and read as any other."""
    direct, theirs = pair
    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(theirs.send, b"first")
            assert await direct.receive_when_readable(64) == b"first"  # in trio's epoll set
        number = direct.socket.fileno()
        direct.close(waited_on=False)
        ours, peer = socket.socketpair()
        if ours.fileno() != number:  # the new socket under the old number
            os.dup2(ours.fileno(), number)
            ours.close()
            ours = socket.socket(fileno=number)
        again = DirectStream(ours)

        async def send_later() -> None:
            await trio.sleep(0.01)  # once the new socket waits
            peer.send(b"second")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(send_later)
            assert await again.receive_when_readable(64) == b"second"
        again.close(waited_on=False)
        peer.close()
