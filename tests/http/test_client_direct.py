"""The worker's socket read directly (``DirectStream`` with ``checks_cancel=False``, as
``http/client_socket.py`` makes it): a read that finds data goes without a cancellation check,
and a cancel still reaches a reader that always finds data at its next turn through the
scheduler. What both sides share is in ``test_direct_stream.py``."""

from __future__ import annotations

import trio

from orbit_actors.http.direct_stream import CALLS_BEFORE_A_CHECKPOINT, DirectStream


async def test_a_read_that_finds_data_goes_without_a_cancel_check_until_its_next_turn(
    socket_pair: tuple[trio.SocketStream, trio.socket.SocketType],
) -> None:
    stream, theirs = socket_pair
    direct = DirectStream.of(stream, checks_cancel=False)
    assert direct is not None
    await theirs.send(b"x" * 2 * CALLS_BEFORE_A_CHECKPOINT)  # all there before the first read
    reads = 0
    with trio.CancelScope() as scope:
        scope.cancel()
        while True:
            assert await direct.receive_some(1) == b"x"
            reads += 1
    assert scope.cancelled_caught
    assert reads == CALLS_BEFORE_A_CHECKPOINT  # the next read's turn raised
    assert await direct.receive_some(64) == b"x" * CALLS_BEFORE_A_CHECKPOINT  # nothing lost
