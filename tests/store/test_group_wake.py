"""How the group writer hands outcomes back to the trio loop: one waiting requester watches the
writer thread's wake-up socket and hands out every finished batch; the watch passes on while
writes are in flight; a cancel never leaves a write half-known nor another requester waiting."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import trio
import trio.testing

from orbit_actors.store.sqlite.writer import GroupWriter


def _writer(path: Path) -> GroupWriter:
    sqlite3.connect(path).execute("CREATE TABLE t (x INTEGER)").connection.commit()
    return GroupWriter(
        lambda: sqlite3.connect(path, isolation_level=None, check_same_thread=True), str(path)
    )


def _insert(value: int) -> Callable[[sqlite3.Connection], int]:
    return lambda conn: conn.execute("INSERT INTO t VALUES (?)", (value,)).rowcount


async def test_every_requester_gets_its_own_outcome_whoever_watches(tmp_path: Path) -> None:
    writer = _writer(tmp_path / "w.db")
    await writer.start()
    first, second, taken = threading.Event(), threading.Event(), threading.Event()
    results: dict[int, int] = {}
    watcher_done = trio.Event()

    async def write(value: int, gate: threading.Event | None = None) -> None:
        def work(conn: sqlite3.Connection) -> int:
            if gate is not None:
                taken.set()
                gate.wait(10)
            return int(conn.execute("SELECT ?", (value,)).fetchone()[0])

        results[value] = await writer.write(work)
        if value == -1:
            watcher_done.set()

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(write, -1, first)  # the first watcher; its batch is held
            await trio.to_thread.run_sync(taken.wait)  # the thread took it alone
            nursery.start_soon(write, 0, second)  # the next batch, held while the first ends
            for value in range(1, 50):
                nursery.start_soon(write, value)
            await trio.testing.wait_all_tasks_blocked()
            first.set()  # the watcher's batch ends alone: it must pass the watch on to leave
            await watcher_done.wait()
            assert set(results) == {-1}
            second.set()
    for value in range(100, 110):  # one at a time: each requester watches for itself
        await write(value)
    await writer.stop()
    assert results == {v: v for v in [-1, *range(50), *range(100, 110)]}


async def test_a_cancelled_watcher_waits_for_its_write_and_others_still_complete(
    tmp_path: Path,
) -> None:
    path = tmp_path / "w.db"
    writer = _writer(path)
    await writer.start()
    gate = threading.Event()
    seen: list[str] = []

    async def held() -> None:
        with trio.CancelScope() as scope:
            scope.cancel()  # cancelled before its write is even handed over: refused at once
            await writer.write(_insert(0))
        seen.append("refused" if scope.cancelled_caught else "written")

    async def watcher(scope: trio.CancelScope) -> None:
        with scope:
            await writer.write(lambda c: (gate.wait(10), _insert(1)(c)))
            seen.append("watcher written")
            await trio.sleep(0)  # the cancel comes here, once the outcome is known
        seen.append("watcher cancelled")

    async def other() -> None:
        await writer.write(_insert(2))
        seen.append("other written")

    scope = trio.CancelScope()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watcher, scope)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(other)
            await trio.testing.wait_all_tasks_blocked()
            scope.cancel()  # the watcher is cancelled while its write is in the writer's hands
            await trio.testing.wait_all_tasks_blocked()
            assert seen == []
            gate.set()
    await held()
    await writer.stop()
    assert sorted(seen) == ["other written", "refused", "watcher cancelled", "watcher written"]
    assert seen.index("watcher written") < seen.index("watcher cancelled")
    values = sqlite3.connect(path).execute("SELECT x FROM t ORDER BY x").fetchall()
    assert values == [(1,), (2,)]


async def test_a_writer_stopped_with_nothing_in_flight_closes_its_wake_up_socket(
    tmp_path: Path,
) -> None:
    writer = _writer(tmp_path / "w.db")
    await writer.start()
    await writer.write(_insert(1))
    await writer.stop()
    assert writer._wake_in.fileno() == -1 and writer._wake_out.fileno() == -1


async def test_a_write_handed_over_is_told_its_outcome_and_takes_the_watch_when_it_comes(
    tmp_path: Path,
) -> None:
    writer = _writer(tmp_path / "w.db")
    await writer.start()
    assert writer.hand_over(_insert(0), 1, lambda request: None) is None  # nobody watches
    held, taken = threading.Event(), threading.Event()
    told: list[tuple[object, bool]] = []  # (result, told in the handing-over task's own step)
    me = trio.lowlevel.current_task()

    def hold(conn: sqlite3.Connection) -> int:
        taken.set()
        held.wait(10)
        return 1

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer.write, hold)  # the watcher; its batch is held alone
            await trio.to_thread.run_sync(taken.wait)
            request = writer.hand_over(
                _insert(2),
                1,
                lambda r: told.append((r.result, trio.lowlevel.current_task() is me)),
            )
            assert request is not None
            held.set()  # the watcher's batch ends first: the watch comes to the handed write
            await trio.lowlevel.wait_task_rescheduled(
                lambda raise_cancel: trio.lowlevel.Abort.FAILED
            )
            assert not request.done and told == []  # woken to watch, not with the outcome
            await writer.take_watch(request)
            assert told == [(1, True)]
    await writer.stop()
