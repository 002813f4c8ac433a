"""A socket read directly (``http/client_direct.py``) waits only when the socket is empty, yet a
reader that always finds data still lets the other tasks run now and then."""

from __future__ import annotations

import trio

from orbit_actors.http.client_direct import READS_BEFORE_A_CHECKPOINT, DirectSocket

GUARD = 20  # seconds: a hang guard, never a speed assertion


async def test_a_reader_that_always_finds_data_lets_other_tasks_run() -> None:
    ours, theirs = trio.socket.socketpair()
    chunks = 3 * READS_BEFORE_A_CHECKPOINT
    await theirs.send(b"x" * 64 * chunks)  # all there before the first read
    direct = DirectSocket.of(trio.SocketStream(ours))
    assert direct is not None
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
    # a turn every READS_BEFORE_A_CHECKPOINT reads (trio picks which runnable task goes first)
    assert seen_at[0] < chunks and seen_at[0] % READS_BEFORE_A_CHECKPOINT == 0
    theirs.close()
    ours.close()
