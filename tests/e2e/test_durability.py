"""Killing things: a server SIGKILLed under load, a worker SIGKILLed mid-task, a server restart
under a worker holding a task, and a graceful stop. Real processes, a real SQLite file."""

from __future__ import annotations

import json
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from orbit_actors.client import Client

from .harness import ServerProcess, WorkerProcess, wait_until

NAPS = """
workflow: naps
version: 1.0.0
tasks: {nap: {version: "1"}}
steps:
  - {id: a, task: nap, input: {seconds: 0.4, n: "${input.n}"}}
  - {id: b, task: nap, input: {seconds: 0.4, n: "${steps.a.output.n}"}}
  - {id: c, task: nap, input: {seconds: 0.4, n: "${steps.b.output.n}"}}
output: {n: "${steps.c.output.n}"}
"""
GATE = """
workflow: gated
version: 1.0.0
tasks: {gate: {version: "1"}}
steps: [{id: g, task: gate, input: {path: "${input.path}"}}]
output: "${steps.g.output}"
"""


def starts(log: Path) -> list[dict[str, Any]]:
    """The task starts the workers recorded."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def succeeded_per_step(client: Client, execution_id: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for event in client.history(execution_id).events:
        if event["type"] == "StepSucceeded":
            counts[event["step"]] = counts.get(event["step"], 0) + 1
    return counts


def test_a_server_killed_under_load_finishes_every_execution_once(
    tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    server = ServerProcess(tmp_path, "--session-timeout", "10s").start()
    log = tmp_path / "starts.jsonl"
    env = {"E2E_LOG": str(log), "E2E_CONCURRENCY": "200"}
    try:
        with server.client() as client:
            client.deploy(NAPS)
            workers += [WorkerProcess(server, f"load-{i}", env=env) for i in range(2)]
            ids = [f"load-{i}" for i in range(250)]
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda i: client.start("naps", input={"n": i}, execution_id=i), ids))
            running = client.executions(status="running", limit=1000).executions
            assert len(running) >= 200
        server.kill(signal.SIGKILL)
        server.start()
        with server.client() as client:
            for execution_id in ids:
                assert client.wait(execution_id, timeout=60).status == "completed", execution_id
                assert client.describe(execution_id).output == {"n": execution_id}
                assert succeeded_per_step(client, execution_id) == {"a": 1, "b": 1, "c": 1}
    finally:
        server.stop()
    keys = {entry["key"] for entry in starts(log)}
    assert keys == {f"{i}/1/{step}" for i in ids for step in "abc"}


def test_a_worker_killed_mid_task_has_it_redelivered_to_another(
    tmp_path: Path, server: ServerProcess, workers: list[WorkerProcess]
) -> None:
    server.stop()
    server = ServerProcess(tmp_path, "--session-timeout", "2s").start()
    log, gate = tmp_path / "starts.jsonl", tmp_path / "open"
    try:
        with server.client() as client:
            client.deploy(GATE)
            first = WorkerProcess(server, "first", env={"E2E_LOG": str(log)})
            workers.append(first)
            execution_id = client.start("gated", input={"path": str(gate)}).execution_id
            wait_until(lambda: len(starts(log)) == 1, what="the first worker to take the task")
            workers.append(WorkerProcess(server, "second", env={"E2E_LOG": str(log)}))
            wait_until(lambda: any(w.worker_id == "second" and w.online for w in client.workers()),
                       what="the second worker to register")  # fmt: skip
            first.kill(signal.SIGKILL)
            wait_until(lambda: len(starts(log)) == 2, timeout=30, what="the redelivery")
            gate.touch()
            assert client.wait(execution_id, timeout=30).status == "completed"
            assert client.describe(execution_id).output["worker"] == "second"
    finally:
        server.stop()
    taken, again = starts(log)
    assert taken["worker"] == "first" and taken["redelivery"] is False
    assert again["worker"] == "second" and again["redelivery"] is True
    assert again["key"] == taken["key"] == f"{execution_id}/1/g"
    assert again["attempt"] == taken["attempt"] == 1


def test_a_worker_holding_a_task_through_a_server_restart_reports_it_late_and_is_accepted(
    tmp_path: Path, server: ServerProcess, workers: list[WorkerProcess]
) -> None:
    log, gate = tmp_path / "starts.jsonl", tmp_path / "open"
    with server.client() as client:
        client.deploy(GATE)
        workers.append(WorkerProcess(server, "holder", env={"E2E_LOG": str(log)}))
        execution_id = client.start("gated", input={"path": str(gate)}).execution_id
        wait_until(lambda: len(starts(log)) == 1, what="the worker to take the task")
    server.kill(signal.SIGKILL)
    server.start()
    with server.client() as client:
        wait_until(lambda: any(w.online for w in client.workers()), what="the worker to reconnect")
        gate.touch()
        assert client.wait(execution_id, timeout=30).status == "completed"
        detail = client.describe(execution_id)
    assert detail.output["worker"] == "holder"
    assert len(starts(log)) == 1  # resumed: no redelivery
    assert detail.units[0].redelivery is False


def test_sigterm_drains_and_a_restart_carries_on(
    tmp_path: Path, server: ServerProcess, workers: list[WorkerProcess]
) -> None:
    with server.client() as client:
        client.deploy(NAPS)
        workers.append(WorkerProcess(server, "steady"))
        execution_id = client.start("naps", input={"n": 1}).execution_id
    assert server.kill(signal.SIGTERM) == 0
    server.start()
    with server.client() as client:
        assert client.wait(execution_id, timeout=60).status == "completed"
