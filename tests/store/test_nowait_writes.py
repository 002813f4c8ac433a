"""A write nobody waits for (a worker's sign of life): it rides in the next batch, a batch of
nothing else commits without an fsync of its own, nothing the trio side does waits for it, and it
is durable with the next commit that is."""

from __future__ import annotations

import logging
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from orbit_actors.store import WorkerRecord, open_sqlite_store
from orbit_actors.store.sqlite.schema import connect
from orbit_actors.store.sqlite.writer import GroupWriter

ROOT = Path(__file__).resolve().parents[2]


async def _writer(path: Path) -> GroupWriter:
    sqlite3.connect(path).execute("CREATE TABLE t (x INTEGER)").connection.commit()
    writer = GroupWriter(lambda: connect(path, "full", writer=True), str(path))
    await writer.start()
    return writer


def _synchronous(seen: list[int]) -> Callable[[sqlite3.Connection], None]:
    """A write that notes the synchronous level its transaction runs under."""
    return lambda conn: seen.append(conn.execute("PRAGMA synchronous").fetchone()[0])


async def test_a_write_alone_that_nobody_waits_for_commits_without_an_fsync(
    tmp_path: Path,
) -> None:
    writer = await _writer(tmp_path / "w.db")
    seen: list[int] = []
    writer.write_nowait(_synchronous(seen), "a note")
    with trio.fail_after(10):
        while writer.stats.batches < 1:  # committed alone
            await trio.sleep(0.01)
    await writer.write(_synchronous(seen))
    await writer.stop()
    assert seen == [1, 2]  # NORMAL for the note alone, FULL again for the next


async def test_a_write_nobody_waits_for_rides_in_a_durable_batch(tmp_path: Path) -> None:
    writer = await _writer(tmp_path / "w.db")
    gate, taken = threading.Event(), threading.Event()
    seen: list[int] = []

    def hold(conn: sqlite3.Connection) -> None:
        taken.set()
        gate.wait(10)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer.write, hold)
        await trio.to_thread.run_sync(taken.wait)
        writer.write_nowait(_synchronous(seen), "a note")
        nursery.start_soon(writer.write, _synchronous(seen))
        await trio.sleep(0.05)
        gate.set()  # both wait behind the held batch: they form the next one together
    await writer.stop()
    assert seen == [2, 2] and writer.stats.batches == 2


async def test_a_failed_write_nobody_waits_for_is_logged_and_undoes_only_itself(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    writer = await _writer(tmp_path / "w.db")
    gate, taken = threading.Event(), threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        taken.set()
        gate.wait(10)

    with caplog.at_level(logging.WARNING, logger="orbit.store"):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer.write, hold)
            await trio.to_thread.run_sync(taken.wait)
            writer.write_nowait(lambda conn: conn.execute("INSERT INTO t VALUES (1)"), "one")
            writer.write_nowait(lambda conn: conn.execute("INSERT INTO nope VALUES (2)"), "two")
            nursery.start_soon(writer.write, lambda conn: conn.execute("INSERT INTO t VALUES (3)"))
            await trio.sleep(0.05)
            gate.set()  # all three in the next batch
    await writer.stop()
    assert "could not write two" in caplog.text and "no such table: nope" in caplog.text
    rows = sqlite3.connect(tmp_path / "w.db").execute("SELECT x FROM t ORDER BY x").fetchall()
    assert rows == [(1,), (3,)] and writer.stats.batches == 2


async def test_a_sign_of_life_does_not_wait_for_the_writer(tmp_path: Path) -> None:
    async with open_sqlite_store(tmp_path / "o.db") as store:
        await store.upsert_worker(WorkerRecord("w1", "python", "sdk", [], 0, 0))
        gate, taken = threading.Event(), threading.Event()
        released: list[bool] = []

        def hold(conn: sqlite3.Connection) -> None:
            taken.set()
            released.append(gate.wait(3))  # False: nobody let it go, it gave up

        async with trio.open_nursery() as nursery:
            nursery.start_soon(store._writer.write, hold)
            await trio.to_thread.run_sync(taken.wait)
            await store.touch_worker("w1", 5000)  # returns while the writer is held
            [worker] = await store.workers()  # and the list shows it at once
            gate.set()
        assert released == [True] and worker.last_seen_ms == 5000


def test_a_sign_of_life_before_an_acknowledged_commit_survives_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    acknowledged = 0
    for generation in range(4):
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.store.crash_writer", str(path), str(generation), "touch"],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        lines = [child.stdout.readline() for _ in range(200)]
        child.send_signal(signal.SIGKILL)
        lines += child.stdout.readlines()
        child.wait()
        touched = [int(line.split()[1]) for line in lines if line.startswith("touched ")]
        assert touched, "no sign of life was acknowledged"
        acknowledged = max(acknowledged, *touched)
        conn = sqlite3.connect(path)
        ((last_seen,),) = conn.execute("SELECT last_seen_ms FROM workers").fetchall()
        conn.close()
        assert last_seen >= acknowledged


class _BeginFailsOnce(sqlite3.Connection):
    """A connection whose first ``BEGIN IMMEDIATE`` fails (an I/O error, say)."""

    failed = False

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "BEGIN IMMEDIATE" and not self.failed:
            self.failed = True
            raise sqlite3.OperationalError("disk I/O error")
        return super().execute(sql, *args)


async def test_a_write_after_a_failed_begin_of_one_nobody_waits_for_is_durable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "w.db"
    sqlite3.connect(path).execute("CREATE TABLE t (x INTEGER)").connection.commit()

    def failing() -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, factory=_BeginFailsOnce)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        return conn

    writer = GroupWriter(failing, str(path))
    await writer.start()
    writer.write_nowait(lambda conn: None, "a note")  # lowered to NORMAL, then BEGIN fails
    with trio.fail_after(10):
        while "could not write a note" not in caplog.text:
            await trio.sleep(0.01)
    seen: list[int] = []
    await writer.write(_synchronous(seen))
    await writer.stop()
    assert seen == [2]  # FULL: the next acknowledged commit waits for the disk
