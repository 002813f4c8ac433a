"""A server stopped at each named crash point (``ORBIT_CRASH_AT``, docs/faults.md) under load,
then restarted on the same SQLite file: every start it answered completes, no step is resolved
twice, and every task run again carries the key (and attempt) it had. Real server and worker
processes; the crash comes at the n-th pass of the point, while executions are being started."""

from __future__ import annotations

import json
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from orbit_actors.crashpoints import EXIT_CODE
from tests.pg import PostgresServer

from .harness import ServerProcess, WorkerProcess
from .test_cluster import NAP3, Cluster
from .test_durability import succeeded_per_step

NAPS = """
workflow: naps
version: 1.0.0
tasks: {nap: {version: "1"}}
steps:
  - {id: a, task: nap, input: {seconds: 0.05, n: "${input.n}"}}
  - {id: b, task: nap, input: {seconds: 0.05, n: "${steps.a.output.n}"}}
  - {id: c, task: nap, input: {seconds: 0.05, n: "${steps.b.output.n}"}}
output: {n: "${steps.c.output.n}"}
"""
EXECUTIONS = 120


def start_until_it_stops(server: ServerProcess) -> list[str]:
    """Start executions (8 at a time) until the server exits; the ids whose start was
    answered."""

    def start(n: int) -> str | None:
        try:
            answer = httpx.post(
                f"{server.url}/v1/executions", timeout=30,
                json={"workflow": "naps", "input": {"n": f"e{n}"}, "execution_id": f"e{n}"},
            )  # fmt: skip
        except httpx.TransportError:
            return None
        return f"e{n}" if answer.status_code == 201 else None

    with ThreadPoolExecutor(8) as pool:
        started = [i for i in pool.map(start, range(EXECUTIONS)) if i is not None]
    return started


def deliveries(log: Path) -> dict[str, list[dict[str, Any]]]:
    """The task starts the worker recorded, per idempotency key."""
    found: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        found[entry["key"]].append(entry)
    return found


@pytest.mark.parametrize(
    ("point", "at_pass"),
    [
        ("commit-before-answer", 60),
        ("answer-before-dispatch", 20),
        ("group-commit", 60),
        ("result-before-ack", 30),
    ],
)
def test_a_server_stopped_at_a_crash_point_loses_nothing_it_acknowledged(
    point: str, at_pass: int, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    server = ServerProcess(tmp_path, "--session-timeout", "5s")
    server.env = {"ORBIT_CRASH_AT": f"{point}:{at_pass}"}
    log = tmp_path / "starts.jsonl"
    try:
        server.start()
        with server.client() as client:
            client.deploy(NAPS)
        # few slots: tasks queue up, so dispatches come after the starts were answered
        workers.append(
            WorkerProcess(server, "w", env={"E2E_LOG": str(log), "E2E_CONCURRENCY": "4"})
        )
        acknowledged = start_until_it_stops(server)
        assert server.process is not None
        assert server.process.wait(timeout=120) == EXIT_CODE
        assert f"crash point {point} reached (pass {at_pass})" in server.log_text()
        server.env = {}
        server.start()
        with server.client() as client:
            for execution_id in acknowledged:
                assert client.wait(execution_id, timeout=120).status == "completed", execution_id
                assert client.describe(execution_id).output == {"n": execution_id}
                assert succeeded_per_step(client, execution_id) == {"a": 1, "b": 1, "c": 1}
            listed = {e.execution_id for e in client.executions(limit=1000).executions}
    finally:
        server.stop()
    assert set(acknowledged) <= listed
    for key, seen in deliveries(log).items():  # a task run again is the same attempt, same key
        execution_id, run, step = key.split("/")
        assert execution_id in listed and run == "1" and step in "abc", key
        assert len({entry["attempt"] for entry in seen}) == 1, seen


def test_a_server_stopped_between_its_takeover_and_its_first_commit_loses_nothing(
    tmp_path: Path, postgres: PostgresServer, workers: list[WorkerProcess]
) -> None:
    """Shared mode: the owner is killed; the server that takes its executions over stops right
    after writing the takeover; a third server takes over from both and finishes everything —
    including the units the second server's workers had claimed, whose offers reach the third
    server only after it took the second over (docs/decisions.md, "An offer that crosses its
    server's takeover")."""
    url = postgres.create_database("crash_takeover")
    cluster = Cluster(tmp_path, url, 3)
    owner, taker, last = cluster.servers
    taker.env = {"ORBIT_CRASH_AT": "takeover-before-commit"}
    log = tmp_path / "starts.jsonl"
    try:
        owner.start()
        taker.start()
        with owner.client() as client:
            client.deploy(NAP3)
            urls = f"{owner.url},{taker.url}"
            for k in range(2):
                env = {"E2E_LOG": str(log), "ORBIT_URL": urls, "E2E_CONCURRENCY": "4"}
                workers.append(WorkerProcess(owner, f"w{k}", env=env))
            ids = [client.start("naps", input={"n": n}).execution_id for n in range(40)]
        assert cluster.sql("SELECT 1 FROM executions WHERE status = 'running' LIMIT 1")
        owner.kill()
        assert taker.process is not None and taker.process.wait(timeout=60) == EXIT_CODE
        assert "crash point takeover-before-commit reached" in taker.log_text()
        last.start()
        for k in range(2):
            env = {"E2E_LOG": str(log), "ORBIT_URL": last.url}
            workers.append(WorkerProcess(last, f"v{k}", env=env))
        with last.client() as client:
            for execution_id in ids:
                assert client.wait(execution_id, timeout=120).status == "completed", execution_id
                assert succeeded_per_step(client, execution_id) == {"a": 1, "b": 1, "c": 1}
    finally:
        for server in cluster.servers:
            server.stop()
    for key, seen in deliveries(log).items():
        assert key.split("/")[0] in ids and len({e["attempt"] for e in seen}) == 1, seen
