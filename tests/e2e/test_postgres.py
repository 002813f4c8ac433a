"""A real server on PostgreSQL (``--database-url``): a worker runs a 3-step workflow to its end,
and an execution waiting for a signal survives a SIGKILL of the server."""

from __future__ import annotations

import itertools
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pg import PostgresServer

from .conftest import ECHO3
from .harness import ServerProcess, WorkerProcess
from .test_passivation import APPROVAL

_numbers = itertools.count()


@pytest.fixture
def on_postgres(tmp_path: Path, postgres: PostgresServer) -> Iterator[ServerProcess]:
    """A server (not started) on a new PostgreSQL database; stopped afterwards."""
    url = postgres.create_database(f"e2e_{next(_numbers)}")
    server = ServerProcess(tmp_path, "--database-url", url, "--lease-time", "2s")
    yield server
    server.stop()


def test_a_worker_runs_a_three_step_workflow_on_postgres(
    on_postgres: ServerProcess, workers: list[WorkerProcess]
) -> None:
    server = on_postgres.start()
    with server.client() as client:
        client.deploy(ECHO3)
        workers.append(WorkerProcess(server, "pg-worker"))
        client.start("three", input={"n": 7}, execution_id="pg-three")
        done = client.result("pg-three", timeout=60)
        assert (done.status, done.output) == ("completed", {"n": 7})
        steps = [e["step"] for e in client.history("pg-three").events
                 if e["type"] == "StepSucceeded"]  # fmt: skip
        assert steps == ["a", "b", "c"]


def test_a_waiting_execution_survives_a_sigkill_of_the_server_on_postgres(
    on_postgres: ServerProcess,
) -> None:
    server = on_postgres.start()
    with server.client() as client:
        client.deploy(APPROVAL)
        client.start("approval-e2e", execution_id="pg-wait")
    server.kill(signal.SIGKILL)
    server.start()
    with server.client() as client:
        assert client.query("pg-wait", "stage") == "waiting"
        client.signal("pg-wait", "approve", {"by": "ann"})
        done = client.result("pg-wait", timeout=60)
        assert (done.status, done.output) == ("completed", {"by": "ann"})


def test_a_server_that_cannot_reach_postgres_says_so_in_one_line(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    url = f"postgresql://orbit:secret@127.0.0.1:{postgres.port + 1}/none"
    result = subprocess.run(
        [sys.executable, "-m", "orbit_actors.cli", "server", "--database-url", url,
         "--bind", "127.0.0.1:0"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    expected = f"error: cannot connect to PostgreSQL at postgresql://orbit@127.0.0.1:{postgres.port + 1}/none: "
    assert result.returncode == 1 and result.stderr.startswith(expected), result.stderr
    assert result.stderr.count("\n") == 1 and "secret" not in result.stderr


def test_a_server_is_given_a_sqlite_file_or_a_database_url_not_both(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "orbit_actors.cli", "server", "--db", "o.db",
         "--database-url", "postgresql://nobody@127.0.0.1/none"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2 and "not allowed with argument --db" in result.stderr
