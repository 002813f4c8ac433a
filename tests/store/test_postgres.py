"""What the PostgreSQL store adds to the contract: its schema is created once by whichever
server comes first, foreign or newer databases are refused, commits are grouped, a failed batch
writes nothing, a broken connection is replaced, and two stores on one database create an id
once."""

from __future__ import annotations

import itertools
import threading
from typing import Any

import pytest
import trio

from orbit_actors.errors import StorageError
from orbit_actors.store import AlreadyStored, StoreOpenError
from tests.pg import PostgresServer

from .helpers import commit

psycopg = pytest.importorskip("psycopg")
from orbit_actors.store.postgres import open_postgres_store  # noqa: E402
from orbit_actors.store.postgres.schema import SCHEMA_VERSION, prepare  # noqa: E402
from orbit_actors.store.postgres.writer import PostgresEngine  # noqa: E402

_numbers = itertools.count()


@pytest.fixture
def fresh(postgres: PostgresServer) -> str:
    """The URL of a new, empty database."""
    return postgres.create_database(f"fresh_{next(_numbers)}")


def scalar(url: str, query: str) -> object:
    with psycopg.connect(url) as conn:
        return conn.execute(query.encode()).fetchone()[0]


async def test_a_new_database_is_migrated_and_reopened_as_it_is(fresh: str) -> None:
    async with open_postgres_store(fresh) as store:
        await store.commit(commit("e1", 1))
    async with open_postgres_store(fresh) as store:
        assert [e.seq for e in await store.history("e1")] == [1, 2, 3]
    assert scalar(fresh, "SELECT version FROM schema_version") == SCHEMA_VERSION


def test_servers_starting_at_once_migrate_once(fresh: str) -> None:
    errors: list[BaseException] = []

    def migrate() -> None:
        try:
            prepare(fresh)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=migrate) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert scalar(fresh, "SELECT COUNT(*) FROM schema_version") == 1


def test_a_database_of_another_application_is_refused_untouched(fresh: str) -> None:
    with psycopg.connect(fresh) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(StoreOpenError, match=r"another application \(tables: invoices\)"):
        prepare(fresh)
    assert scalar(fresh, "SELECT COUNT(*) FROM information_schema.tables "
                         "WHERE table_schema = 'public'") == 1  # fmt: skip


def test_a_database_migrated_by_a_newer_orbit_is_refused(fresh: str) -> None:
    prepare(fresh)
    with psycopg.connect(fresh) as conn:
        conn.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(StoreOpenError, match="migrated by a newer Orbit .* upgrade Orbit"):
        prepare(fresh)


async def test_an_unreachable_server_is_one_line_naming_it(postgres: PostgresServer) -> None:
    url = f"postgresql://orbit:secret@127.0.0.1:{postgres.port + 1}/nowhere"
    with pytest.raises(StoreOpenError) as raised:
        async with open_postgres_store(url):
            pass
    message = str(raised.value)
    assert message.startswith(
        f"cannot connect to PostgreSQL at postgresql://orbit@127.0.0.1:{postgres.port + 1}/nowhere: "
    )
    assert "\n" not in message and "secret" not in message


async def test_concurrent_commits_share_transactions(fresh: str) -> None:
    async with open_postgres_store(fresh) as store:
        async with trio.open_nursery() as nursery:
            for index in range(200):
                nursery.start_soon(store.commit, commit(f"e{index}", 1))
        stats = store.statistics()
        assert stats.commits == 200 and stats.batches < 200 and stats.largest_batch > 1


async def test_one_transaction_per_commit_when_group_commit_is_off(fresh: str) -> None:
    async with open_postgres_store(fresh, group_commit=False) as store:
        async with trio.open_nursery() as nursery:
            for index in range(20):
                nursery.start_soon(store.commit, commit(f"e{index}", 1))
        assert store.statistics().batches == 20


async def test_a_failing_batch_fails_every_requester_and_writes_nothing(fresh: str) -> None:
    from orbit_actors.store.group import GroupWriter

    with psycopg.connect(fresh) as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
    writer = GroupWriter(PostgresEngine(fresh, "fresh"), "fresh")
    await writer.start()
    gate = threading.Event()
    outcomes: dict[str, str] = {}

    async def submit(name: str, work: object) -> None:
        try:
            await writer.write(work)  # type: ignore[arg-type]
            outcomes[name] = "ok"
        except StorageError as exc:
            outcomes[name] = str(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(submit, "hold", lambda c: gate.wait(10))
        await trio.sleep(0.05)
        nursery.start_soon(submit, "good1", lambda c: c.execute("INSERT INTO t VALUES (1)"))
        nursery.start_soon(submit, "bad", lambda c: c.execute("INSERT INTO nope VALUES (1)"))
        nursery.start_soon(submit, "good2", lambda c: c.execute("INSERT INTO t VALUES (2)"))
        await trio.sleep(0.05)
        gate.set()
    await writer.stop()
    assert outcomes["hold"] == "ok"
    assert all('relation "nope" does not exist' in outcomes[n] for n in ("good1", "bad", "good2"))
    assert scalar(fresh, "SELECT COUNT(*) FROM t") == 0


async def test_a_write_nobody_waits_for_commits_asynchronously_and_fails_alone(
    fresh: str,
) -> None:
    from orbit_actors.store.group import GroupWriter

    with psycopg.connect(fresh) as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
        (name,) = conn.execute("SELECT current_database()").fetchone()
        conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = on')  # tests run off
    writer = GroupWriter(PostgresEngine(fresh, "fresh"), "fresh")
    await writer.start()
    gate, taken = threading.Event(), threading.Event()
    seen: list[str] = []

    def hold(conn: object) -> None:
        taken.set()
        gate.wait(10)

    def note(conn: Any) -> None:
        seen.append(conn.execute("SHOW synchronous_commit").fetchone()[0])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer.write, hold)
        await trio.to_thread.run_sync(taken.wait)
        writer.write_nowait(lambda c: c.execute("INSERT INTO nope VALUES (1)"), "a bad note")
        writer.write_nowait(note, "a note")
        nursery.start_soon(writer.write, lambda c: c.execute("INSERT INTO t VALUES (1)"))
        await trio.sleep(0.05)
        gate.set()  # all three in the next batch: the bad note undoes itself alone
    writer.write_nowait(note, "a note")  # alone: committed without waiting for the flush
    with trio.fail_after(10):
        while writer.stats.batches < 3:
            await trio.sleep(0.01)
    await writer.stop()
    assert seen == ["on", "off"] and scalar(fresh, "SELECT COUNT(*) FROM t") == 1


async def test_connections_postgres_dropped_while_idle_are_replaced_unnoticed(fresh: str) -> None:
    async with open_postgres_store(fresh) as store:
        await store.commit(commit("e1", 1))
        assert await store.history("e1")
        with psycopg.connect(fresh, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid != pg_backend_pid()"
            )
        await store.commit(commit("e1", 4))
        assert [e.seq for e in await store.history("e1")] == [1, 2, 3, 4, 5, 6]


async def test_two_stores_on_one_database_create_an_id_once(fresh: str) -> None:
    outcomes: list[str] = []
    async with open_postgres_store(fresh) as first, open_postgres_store(fresh) as second:

        async def create(store: object, index: int) -> None:
            attempt = commit("same", 1)
            attempt.create = True
            try:
                await store.commit(attempt)  # type: ignore[attr-defined]
                outcomes.append("created")
            except AlreadyStored:
                outcomes.append("refused")

        async with trio.open_nursery() as nursery:
            for index in range(6):
                nursery.start_soon(create, (first, second)[index % 2], index)
        assert sorted(outcomes) == ["created"] + ["refused"] * 5
        assert [e.seq for e in await second.history("same")] == [1, 2, 3]
