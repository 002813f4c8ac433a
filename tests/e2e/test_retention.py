"""Retention through a real server (``--retention 2s``) on a real SQLite file and on
PostgreSQL, with a real worker process: a finished execution is purged behind serving and
answers 404; ``DELETE`` purges one now (204), refuses a running one (409 EXECUTION_RUNNING) and
answers 404 after; ``orbit delete``; the id may be started again; purges are counted; a
malformed ``--retention`` exits 2 naming the flag; a definition's retention under a minute is
400 INVALID_IR with its path."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from orbit_actors.client import ApiError
from tests.pg import PostgresServer

from .conftest import ECHO3
from .harness import ROOT, ServerProcess, WorkerProcess, wait_until
from .test_cli_server import WAITS, orbit

_numbers = itertools.count()


@pytest.fixture(params=["sqlite", "postgres"])
def short_retention(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServerProcess]:
    """A server keeping finished executions 2 s, on SQLite or PostgreSQL."""
    database: list[str] = []
    if request.param == "postgres":
        postgres: PostgresServer = request.getfixturevalue("postgres")
        database = ["--database-url", postgres.create_database(f"retention_{next(_numbers)}")]
    server = ServerProcess(tmp_path, *database, "--retention", "2s").start()
    yield server
    server.stop()


def test_finished_executions_are_purged_behind_serving(
    short_retention: ServerProcess, workers: list[WorkerProcess]
) -> None:
    server = short_retention
    workers.append(WorkerProcess(server, "purge-worker"))
    with server.client() as client:
        client.deploy(ECHO3)
        client.deploy(WAITS)
        client.start("waits", execution_id="still-running")
        client.start("three", input={"n": 1}, execution_id="purged")
        assert client.wait("purged", timeout=30).status == "completed"

        def gone() -> bool:
            return httpx.get(f"{server.url}/v1/executions/purged").status_code == 404

        wait_until(gone, timeout=30, what="the purge")
        assert client.describe("still-running").status == "running"
        assert client.start("three", input={"n": 2}, execution_id="purged").created
        assert client.wait("purged", timeout=30).status == "completed"
    metrics = httpx.get(f"{server.url}/metrics").text
    assert "orbit_executions_purged_total" in metrics
    assert "orbit_executions_purged_total 0.0" not in metrics


def test_delete_purges_a_finished_execution_and_refuses_a_running_one(
    server: ServerProcess, workers: list[WorkerProcess]
) -> None:
    workers.append(WorkerProcess(server, "delete-worker"))
    with server.client() as client:
        client.deploy(ECHO3)
        client.deploy(WAITS)
        client.start("waits", execution_id="running-1")
        client.start("three", input={"n": 1}, execution_id="done-1")
        client.wait("done-1", timeout=30)
    refused = httpx.delete(f"{server.url}/v1/executions/running-1")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "EXECUTION_RUNNING"
    assert httpx.delete(f"{server.url}/v1/executions/done-1").status_code == 204
    assert httpx.get(f"{server.url}/v1/executions/done-1").status_code == 404
    assert httpx.get(f"{server.url}/v1/executions/done-1/history").status_code == 404
    assert httpx.delete(f"{server.url}/v1/executions/done-1").status_code == 404
    with server.client() as client:
        client.start("three", input={"n": 3}, execution_id="done-2")
        client.wait("done-2", timeout=30)
    deleted = orbit(server, "delete", "done-2")
    assert deleted.returncode == 0 and "done-2: deleted" in deleted.stdout
    again = orbit(server, "delete", "running-1")
    assert again.returncode == 1 and "EXECUTION_RUNNING" in again.stderr


def test_a_retention_under_a_minute_is_refused_with_its_path(server: ServerProcess) -> None:
    source = "workflow: brief\nversion: 1.0.0\nretention: 30s\nsteps: [{id: v, value: 1}]\n"
    with server.client() as client, pytest.raises(ApiError) as refused:
        client.deploy(source)
    assert refused.value.code == "INVALID_IR" and refused.value.status == 400
    assert "retention: 30s is shorter than the minimum retention of 1m" in refused.value.message


def test_a_malformed_retention_flag_exits_2_naming_it(tmp_path: Path) -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "orbit_actors.cli", "server", "--db", str(tmp_path / "x.db"),
         "--retention", "a month"],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert ran.returncode == 2 and "--retention" in ran.stderr
