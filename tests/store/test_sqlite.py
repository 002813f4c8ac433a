"""What only the SQLite store has to prove: group commit, durability under SIGKILL, failures that
leave nothing half-written, and clear refusals of files it must not touch."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from orbit_actors.errors import StorageError
from orbit_actors.store import StoreOpenError, open_sqlite_store
from orbit_actors.store.sqlite.schema import (
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    apply_migration,
)
from orbit_actors.store.sqlite.writer import GroupWriter

from .helpers import commit

ROOT = Path(__file__).resolve().parents[2]


async def test_many_concurrent_commits_share_transactions(tmp_path: Path) -> None:
    async with open_sqlite_store(tmp_path / "o.db") as store:
        async with trio.open_nursery() as nursery:
            for index in range(200):
                nursery.start_soon(store.commit, commit(f"e{index}", 1))
        stats = store.statistics()
        assert stats.commits == 200 and stats.batches < 200 and stats.largest_batch > 1


async def test_one_transaction_per_commit_when_group_commit_is_off(tmp_path: Path) -> None:
    async with open_sqlite_store(tmp_path / "o.db", group_commit=False) as store:
        async with trio.open_nursery() as nursery:
            for index in range(20):
                nursery.start_soon(store.commit, commit(f"e{index}", 1))
        assert store.statistics().batches == 20


async def test_a_failing_batch_fails_every_requester_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "w.db"
    sqlite3.connect(path).execute("CREATE TABLE t (x INTEGER)").connection.commit()
    writer = GroupWriter(
        lambda: sqlite3.connect(path, isolation_level=None, check_same_thread=True), "w.db"
    )
    await writer.start()
    gate = threading.Event()
    outcomes: dict[str, str] = {}

    async def submit(name: str, work: object) -> None:
        try:
            await writer.write(work)  # type: ignore[arg-type]
            outcomes[name] = "ok"
        except StorageError as exc:
            outcomes[name] = str(exc)

    def bad(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO nope VALUES (1)")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(submit, "hold", lambda c: gate.wait(10))
        await trio.sleep(0.05)
        nursery.start_soon(submit, "good1", lambda c: c.execute("INSERT INTO t VALUES (1)"))
        nursery.start_soon(submit, "bad", bad)
        nursery.start_soon(submit, "good2", lambda c: c.execute("INSERT INTO t VALUES (2)"))
        await trio.sleep(0.05)
        gate.set()
    await writer.stop()
    assert outcomes["hold"] == "ok"
    assert all("no such table: nope" in outcomes[n] for n in ("good1", "bad", "good2"))
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0


async def test_the_store_keeps_working_after_a_failed_batch(tmp_path: Path) -> None:
    async with open_sqlite_store(tmp_path / "o.db") as store:
        with pytest.raises(StorageError):
            await store.commit(commit("e1", 2))
        await store.commit(commit("e1", 1))
        assert len(await store.history("e1")) == 3


async def test_a_closed_store_refuses_commits_clearly(tmp_path: Path) -> None:
    async with open_sqlite_store(tmp_path / "o.db") as store:
        pass
    with pytest.raises(StorageError, match="closed"):
        await store.commit(commit("e1", 1))


async def test_the_trio_loop_runs_while_a_commit_is_written(tmp_path: Path) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await trio.sleep(0)

    async with open_sqlite_store(tmp_path / "o.db") as store, trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        await store.commit(commit("big", 1, 20_000))
        nursery.cancel_scope.cancel()
    assert ticks > 10


@pytest.mark.parametrize(("mode", "level"), [("full", 2), ("normal", 1)])
async def test_the_durability_level_is_set_and_checked(
    tmp_path: Path, mode: str, level: int
) -> None:
    async with open_sqlite_store(tmp_path / "o.db", synchronous=mode) as store:  # type: ignore[arg-type]

        def check(conn: sqlite3.Connection) -> tuple[int, str]:
            return conn.execute("PRAGMA synchronous").fetchone()[0], conn.execute(
                "PRAGMA journal_mode"
            ).fetchone()[0]

        assert await store._read(check) == (level, "wal")


# -- opening files that are not ours ----------------------------------------------------


async def test_a_file_that_is_not_sqlite_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database" * 100)
    before = path.read_bytes()
    with pytest.raises(
        StoreOpenError,
        match=r"notes\.db is not a usable SQLite database .* Orbit will not overwrite it",
    ):
        async with open_sqlite_store(path):
            pass
    assert path.read_bytes() == before


async def test_a_database_of_another_application_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreOpenError, match=r"another application \(tables: invoices\)"):
        async with open_sqlite_store(path):
            pass


async def test_a_newer_schema_asks_for_a_newer_orbit(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    async with open_sqlite_store(path):
        pass
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreOpenError, match="written by a newer Orbit .* upgrade Orbit"):
        async with open_sqlite_store(path):
            pass


async def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreOpenError, match="is a directory"):
        async with open_sqlite_store(tmp_path):
            pass


async def test_a_read_only_file_is_refused_with_what_to_do(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "o.db"
    await _create(path)
    with (
        _read_only(folder, path),
        pytest.raises(
            StoreOpenError,
            match=r"o\.db cannot be written .* fix the permissions or point --db elsewhere",
        ),
    ):
        async with open_sqlite_store(path):
            pass


@contextlib.contextmanager
def _read_only(folder: Path, path: Path) -> Iterator[None]:
    """Make the file and its folder unwritable, for root too (immutable) when run as root."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    if (
        shutil.which("chattr") is None
        or subprocess.run(["chattr", "+i", str(path), str(folder)]).returncode
    ):
        pytest.skip("running as root without chattr +i: no way to make a file read-only here")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path), str(folder)], check=True)


async def _create(path: Path) -> None:
    async with open_sqlite_store(path) as store:
        await store.commit(commit("e1", 1))


# -- migrations ---------------------------------------------------------------------------


async def test_a_new_file_gets_every_migration(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    async with open_sqlite_store(path):
        pass
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == len(MIGRATIONS)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


async def test_an_older_file_is_migrated_and_keeps_its_data(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_migration(conn, 1)
    conn.execute(
        "INSERT INTO executions (execution_id, workflow, version, definition_hash, status, run, last_seq, started_at_ms) "
        "VALUES ('old', 'wf', '1.0.0', 'h', 'running', 1, 0, 1)"
    )
    conn.close()
    async with open_sqlite_store(path) as store:
        assert await store.running_ids() == ["old"]
        assert await store.workers() == []
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


async def test_a_file_from_before_retention_switches_to_incremental_vacuum(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for number in range(1, 5):
        apply_migration(conn, number)
    conn.execute(
        "INSERT INTO executions (execution_id, workflow, version, definition_hash, status, run, "
        "last_seq, started_at_ms, closed_at_ms) VALUES ('old', 'wf', '1.0.0', 'h', 'completed', "
        "1, 0, 1, 2)"
    )
    assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    conn.close()
    async with open_sqlite_store(path) as store:
        assert (await store.purge("old")).ids == ["old"]
    reopened = sqlite3.connect(path)
    assert reopened.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # INCREMENTAL


async def test_free_pages_beyond_a_quarter_of_the_file_are_given_back(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    async with open_sqlite_store(path) as store:
        for n in range(300):
            await store.commit(commit(f"e{n}", 1, 3, pad=4000, status="completed"))
        grown = path.stat().st_size
        for n in range(300):
            await store.purge(f"e{n}")
        await store.reclaim()
    conn = sqlite3.connect(path)
    free, pages = (conn.execute(f"PRAGMA {name}").fetchone()[0]
                   for name in ("freelist_count", "page_count"))  # fmt: skip
    assert free <= pages // 4 + 1 and path.stat().st_size < grown


# -- proof by killing ---------------------------------------------------------------------


def test_acknowledged_commits_survive_sigkill_twenty_times(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    acknowledged: dict[str, int] = {}
    rng = random.Random(7)
    for generation in range(20):
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.store.crash_writer", str(path), str(generation % 4)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + rng.uniform(0.05, 0.4)
        while time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            execution_id, seq = line.split()
            acknowledged[execution_id] = max(acknowledged.get(execution_id, 0), int(seq))
        assert child.poll() is None, "the writer died before it was killed"
        child.send_signal(signal.SIGKILL)
        for line in child.stdout:  # acknowledgements already in the pipe count too
            execution_id, seq = line.split()
            acknowledged[execution_id] = max(acknowledged.get(execution_id, 0), int(seq))
        child.wait()
        _verify(path, acknowledged)
    assert sum(acknowledged.values()) > 1000, "too few acknowledged commits to prove anything"


def _verify(path: Path, acknowledged: dict[str, int]) -> None:
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = {
        row[0]: (row[1], row[2])
        for row in conn.execute("SELECT execution_id, last_seq, head FROM executions")
    }
    for execution_id, seq in acknowledged.items():
        assert stored.get(execution_id, (0, None))[0] >= seq, (
            f"{execution_id}: acknowledged {seq}, kept {stored.get(execution_id)}"
        )
    for execution_id, (last_seq, head) in stored.items():
        seqs: list[int] = []
        while head is not None:  # walk the run's chain of segments, newest first
            first, last, prev, text, owner = conn.execute(
                "SELECT first_seq, last_seq, prev, events, execution_id FROM segments WHERE id = ?",
                (head,),
            ).fetchone()
            inside = [event["seq"] for event in json.loads(text)]
            assert owner == execution_id and inside == list(range(first, last + 1)), (
                f"{execution_id}: a broken segment"
            )
            seqs = inside + seqs
            head = prev
        assert seqs == list(range(1, last_seq + 1)), f"{execution_id}: gap or partial batch"
        assert last_seq % 3 == 0, f"{execution_id}: a partial batch of {last_seq % 3} events"
    conn.close()


DISK_FULL = """
import json, resource, signal, sys, trio
from orbit_actors.errors import StorageError
from orbit_actors.store import open_sqlite_store
from tests.store.helpers import commit

async def main(path):
    out = {}
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    async with open_sqlite_store(path) as store:
        await store.commit(commit("e1", 1))
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, hard))
        try:
            await store.commit(commit("e1", 4, 2000, pad=500))
            out["full"] = "no error"
        except StorageError as exc:
            out["full"] = str(exc)
        out["after_failure"] = [e.seq for e in await store.history("e1")]
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        await store.commit(commit("e1", 4, 2000, pad=500))
        out["after_recovery"] = len(await store.history("e1"))
    print(json.dumps(out))

trio.run(main, sys.argv[1])
"""


def test_a_full_disk_raises_storage_error_leaves_nothing_and_recovers(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-c", DISK_FULL, str(tmp_path / "full.db")],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["full"].startswith("could not write to") and (
        "full" in out["full"] or "I/O" in out["full"]
    )
    assert out["after_failure"] == [1, 2, 3]
    assert out["after_recovery"] == 2003
    conn = sqlite3.connect(tmp_path / "full.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


async def test_a_file_is_held_by_one_store_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "orbit.db"
    async with open_sqlite_store(path):
        with pytest.raises(StoreOpenError, match=rf"\(pid {os.getpid()}\); stop it first"):
            async with open_sqlite_store(path):
                pass
    async with open_sqlite_store(path):  # released on close
        pass
