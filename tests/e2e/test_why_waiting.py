"""Why work waits, through a real server, a real SQLite file and a real worker process: a
deploy warns about a task no worker has announced; a unit no worker serves says ``no_worker``
in the detail, ``GET /v1/tasks`` and the metric count it; a worker that connects takes it; a
task's ``schedule_to_start`` fails the attempts no worker took and then the step."""

from __future__ import annotations

from pathlib import Path

import httpx

from .conftest import ECHO3
from .harness import ServerProcess, WorkerProcess
from .test_cli_server import orbit

LATE = """
workflow: late
version: 1.0.0
tasks: {nobody: {version: "2", schedule_to_start: 1s}}
steps: [{id: a, task: nobody, retry: {max_attempts: 2, initial_interval: 100ms}}]
"""


def test_a_unit_no_worker_serves_says_why_until_a_worker_takes_it(
    tmp_path: Path, server: ServerProcess, workers: list[WorkerProcess]
) -> None:
    (tmp_path / "three.yaml").write_text(ECHO3)
    deployed = orbit(server, "deploy", str(tmp_path / "three.yaml"))
    assert deployed.returncode == 0
    assert "warning: no worker has ever announced echo@1" in deployed.stderr
    with server.client() as client:
        client.start("three", input={"n": 1}, execution_id="w-1")
        [unit] = client.describe("w-1").units
        assert unit.waiting is not None and unit.waiting.reason == "no_worker"
        assert unit.waiting.message == (
            "no online worker serves echo@1; no worker has ever announced it"
        )
    tasks = httpx.get(f"{server.url}/v1/tasks").json()["tasks"]
    shown = {k: v for k, v in tasks[0].items() if k != "oldest_waiting_ms"}
    assert shown == {"task": "echo", "version": "1", "workers_online": 0, "capacity": 0,
                     "in_flight": 0, "waiting": 1}  # fmt: skip
    assert tasks[0]["oldest_waiting_ms"] >= 0
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'orbit_units_waiting{reason="no_worker",task="echo",version="1"} 1.0' in metrics
    workers.append(WorkerProcess(server, "late-worker"))
    with server.client() as client:
        assert client.wait("w-1", timeout=30).status == "completed"
    again = orbit(server, "deploy", str(tmp_path / "three.yaml"))
    assert again.returncode == 0 and "warning" not in again.stderr


def test_a_task_no_worker_takes_in_time_fails_the_step_after_its_retries(
    server: ServerProcess,
) -> None:
    with server.client() as client:
        client.deploy(LATE)
        client.start("late", execution_id="late-1")
        result = client.wait("late-1", timeout=30)
        assert result.status == "failed"
        history = client.history("late-1").events
    failed = [e for e in history if e["type"] == "StepAttemptFailed"]
    assert [e["error"]["code"] for e in failed] == ["SCHEDULE_TIMEOUT", "SCHEDULE_TIMEOUT"]
    assert failed[0]["error"]["message"] == "no worker took nobody@2 within 1s"


def test_the_deadline_to_be_taken_survives_a_restart_of_the_server(tmp_path: Path) -> None:
    once = LATE.replace("max_attempts: 2", "max_attempts: 1").replace("1s", "3s")
    server = ServerProcess(tmp_path).start()
    try:
        with server.client() as client:
            client.deploy(once)
            client.start("late", execution_id="late-2")
        server.kill()
        server.start()
        with server.client() as client:
            assert client.wait("late-2", timeout=30).status == "failed"
            events = client.history("late-2").events
        scheduled = next(e for e in events if e["type"] == "StepScheduled")
        failed = next(e for e in events if e["type"] == "StepAttemptFailed")
        assert failed["error"]["message"] == "no worker took nobody@2 within 3s"
        assert (
            failed["timestamp_ms"] >= scheduled["start_by_ms"] == scheduled["timestamp_ms"] + 3000
        )
    finally:
        server.stop()
