"""PostgreSQL fails over: a primary with a synchronous streaming replica (both started here), and
three Orbit servers whose URL lists both hosts with ``target_session_attrs=read-write``. Under
load the primary is killed and the replica promoted: the servers reconnect to the new primary by
themselves, every execution they acknowledged completes, no step is resolved twice."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orbit_actors.client import ApiError, Client
from tests.pg import REPLICATED, PostgresServer, promote, start_postgres, start_replica

from .harness import ServerProcess, WorkerProcess, wait_until
from .test_cluster import NAP3
from .test_durability import succeeded_per_step

STOPPED = "waits for the store"  # what a server logs when an actor is stopped by the store


def connected(server: ServerProcess, worker_id: str) -> bool:
    """True once the worker's log says it is connected (it serves tasks)."""
    log = server.folder / f"worker-{worker_id}.log"
    return log.exists() and "connected to" in log.read_text()


def completed(client: Client, execution_id: str, within: float = 120) -> bool:
    """Wait for the execution; a ``STORAGE_ERROR`` (503: a connection the failover broke) is
    asked again, as a client should."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            return client.wait(execution_id, timeout=60).status == "completed"
        except ApiError as exc:
            if exc.code != "STORAGE_ERROR":
                raise
    return False


@pytest.fixture
def replicated() -> Iterator[tuple[PostgresServer, PostgresServer]]:
    primary = start_postgres(settings=REPLICATED)
    if primary is None:
        pytest.skip("no PostgreSQL to test on")
    try:
        replica = start_replica(primary)
    except (RuntimeError, OSError) as exc:
        primary.stop()
        pytest.skip(f"cannot start a streaming replica here: {exc}")
    yield primary, replica
    for server in (primary, replica):
        if server.process.poll() is None:
            server.stop()


def test_servers_follow_a_promoted_replica_and_lose_nothing_acknowledged(
    tmp_path: Path,
    replicated: tuple[PostgresServer, PostgresServer],
    workers: list[WorkerProcess],
) -> None:
    primary, replica = replicated
    primary.execute("CREATE DATABASE failover")
    url = (
        f"postgresql://orbit@127.0.0.1:{primary.port},127.0.0.1:{replica.port}/failover"
        "?target_session_attrs=read-write&connect_timeout=2"
    )
    servers = []
    for n in range(3):
        folder = tmp_path / f"s{n}"
        folder.mkdir()
        servers.append(ServerProcess(folder, "--database-url", url, "--lease-time", "15s"))
    try:
        for server in servers:
            server.start()
        urls = ",".join(s.url for s in servers)
        with servers[0].client() as client:
            client.deploy(NAP3)
        for n in range(3):
            env = {"ORBIT_URL": urls, "E2E_CONCURRENCY": "8"}
            workers.append(WorkerProcess(servers[n], f"w{n}", env=env))
        # under load: on a busy machine a worker may take seconds to start, and a primary
        # killed before any is connected fails no commit of a result
        wait_until(lambda: all(connected(s, f"w{n}") for n, s in enumerate(servers)), 60, "workers")
        clients = [server.client() for server in servers]
        ids = [clients[n % 3].start("naps", input={"n": n}).execution_id for n in range(60)]
        primary.process.send_signal(signal.SIGQUIT)  # an immediate stop: no checkpoint
        primary.process.wait(timeout=30)
        # the replica takes over once the outage has stopped an execution (a result's commit
        # failed, its store unreadable too), well before a lease (15 s) could expire
        wait_until(lambda: any(STOPPED in s.log_text() for s in servers), 5, "a failed commit")
        promote(replica)
        for execution_id in ids:
            assert completed(clients[0], execution_id), execution_id
            assert succeeded_per_step(clients[0], execution_id) == {"a": 1, "b": 1, "c": 1}
        for client in clients:
            client.close()
        assert all(s.process is not None and s.process.poll() is None for s in servers)
    finally:
        for server in servers:
            server.stop()
