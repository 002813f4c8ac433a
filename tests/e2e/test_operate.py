"""Operating executions end to end: a real server on a SQLite file, real worker processes and
the ``orbit`` CLI — terminate, pause/unpause, and the rerun of a saga after its worker is fixed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from .conftest import ECHO3
from .harness import ROOT, ServerProcess, WorkerProcess, wait_until
from .test_cli_server import orbit

HELD = """
workflow: held
version: 1.0.0
tasks: {hold: {version: "1"}, echo: {version: "1"}}
steps:
  - {id: h, task: hold, input: {}}
  - {id: e, task: echo, input: {n: 1}}
"""
SAGA_WORKER = "tests.e2e.saga_workers:worker"
ORDER = {
    "order_id": "o-7",
    "amount": 12.5,
    "items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}],
}


def _saga_with_slow_retries(folder: Path) -> Path:
    """The example order saga, with ship's retry an hour away (the operator steps in first)."""
    text = (ROOT / "examples" / "order_saga.yaml").read_text()
    text = text.replace("    timeout: 2m\n", "    timeout: 2m\n    retry: {initial_interval: 1h}\n")
    path = folder / "order_saga.yaml"
    path.write_text(text)
    return path


def _lines(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_pause_unpause_and_terminate_through_the_cli(
    server: ServerProcess, workers: list[WorkerProcess], tmp_path: Path
) -> None:
    (tmp_path / "held.yaml").write_text(HELD)
    (tmp_path / "three.yaml").write_text(ECHO3)
    assert (
        orbit(
            server, "deploy", str(tmp_path / "held.yaml"), str(tmp_path / "three.yaml")
        ).returncode
        == 0
    )
    log = tmp_path / "tasks.jsonl"
    workers.append(WorkerProcess(server, "w1", env={"E2E_LOG": str(log)}))
    execution_id = orbit(server, "start", "held").stdout.strip()
    wait_until(lambda: len(_lines(log)) == 1, what="the hold task to start")

    assert orbit(server, "pause", execution_id, "--reason", "look first").returncode == 0
    paused = json.loads(orbit(server, "list", "--paused", "--json").stdout)
    assert [e["execution_id"] for e in paused["executions"]] == [execution_id]
    assert paused["executions"][0]["paused"] is True
    unpaused = orbit(server, "unpause", execution_id, "--json")
    assert json.loads(unpaused.stdout)["paused"] is False
    again = orbit(server, "unpause", execution_id)
    assert again.returncode == 1 and "NOT_PAUSED" in again.stderr

    terminated = orbit(server, "terminate", execution_id, "--reason", "wrong order", "--json")
    assert json.loads(terminated.stdout)["status"] == "terminated"
    wait_until(lambda: any(line.get("cancelled") for line in _lines(log)), what="the cancel push")
    history = server.client().history(execution_id)
    assert history.events[-1]["type"] == "WorkflowTerminated"
    assert history.events[-1]["reason"] == "wrong order"
    finished = orbit(server, "terminate", execution_id)
    assert finished.returncode == 1 and "EXECUTION_FINISHED" in finished.stderr


def test_a_saga_whose_ship_failed_is_rerun_after_the_fix_with_charge_dispatched_once(
    server: ServerProcess, workers: list[WorkerProcess], tmp_path: Path
) -> None:
    assert orbit(server, "deploy", str(_saga_with_slow_retries(tmp_path))).returncode == 0
    log = tmp_path / "tasks.jsonl"
    broken = WorkerProcess(
        server, "buggy", SAGA_WORKER, env={"E2E_LOG": str(log), "SHIP_BROKEN": "1"}
    )
    workers.append(broken)
    started = orbit(server, "start", "order-saga", "--input", json.dumps(ORDER), "--id", "order-7")
    assert started.returncode == 0
    client = server.client()

    def ship_failed() -> bool:
        return any(e["type"] == "RetryScheduled" for e in client.history("order-7").events)

    wait_until(ship_failed, what="ship to fail")
    running = orbit(server, "rerun", "order-7", "--dry-run")
    assert running.returncode == 1 and "EXECUTION_RUNNING" in running.stderr
    assert orbit(server, "terminate", "order-7", "--reason", "ship is broken").returncode == 0
    broken.kill()
    workers.append(WorkerProcess(server, "fixed", SAGA_WORKER, env={"E2E_LOG": str(log)}))

    dry = orbit(server, "rerun", "order-7", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "reuse:     charge, reserve" in dry.stdout and "run again: ship" in dry.stdout
    plan = json.loads(orbit(server, "rerun", "order-7", "--dry-run", "--json").stdout)
    assert plan == {
        "from_step": "ship",
        "reused": ["charge", "reserve"],
        "rerun": ["ship"],
        "children": [],
    }
    assert client.describe("order-7").run == 1  # the dry run wrote nothing

    rerun = orbit(server, "rerun", "order-7")
    assert rerun.returncode == 0 and "run 2 started" in rerun.stdout
    result = client.result("order-7", timeout=60)
    assert result.status == "completed" and result.output["tracking"] == "trk-o-7"
    tasks = [line["task"] for line in _lines(log)]
    assert tasks.count("charge") == 1 and tasks.count("reserve") == 2
    assert "refund" not in tasks and "release" not in tasks
    ships = [line["key"] for line in _lines(log) if line["task"] == "ship"]
    assert ships[-1] == "order-7/2/ship" and ships[0] == "order-7/1/ship"
    events = client.history("order-7").events
    assert events[0]["rerun_of"] == {"run": 1, "from_step": "ship"}
    assert [e["step"] for e in events if e["type"] == "StepReused"] == ["charge", "reserve"]


def test_rerun_refusals_carry_the_spec_codes(
    server: ServerProcess, workers: list[WorkerProcess], tmp_path: Path
) -> None:
    from orbit_actors.client import ApiError

    client = server.client()
    client.deploy(ECHO3)
    workers.append(WorkerProcess(server, "w1"))
    client.start("three", input={"n": 1}, execution_id="done-1")
    assert client.result("done-1", timeout=60).status == "completed"
    refusals: dict[str, Callable[[], object]] = {
        "FROM_STEP_REQUIRED": lambda: client.rerun("done-1"),
        "UNKNOWN_STEP": lambda: client.rerun_plan("done-1", from_step="z"),
        "WORKFLOW_NOT_FOUND": lambda: client.rerun("done-1", from_step="b", version="9.9.9"),
        "INVALID_INPUT": lambda: client.rerun("done-1", from_step="b", input=[1]),
        "NOT_FOUND": lambda: client.rerun("nobody", from_step="b"),
    }
    for code, call in refusals.items():
        try:
            call()
        except ApiError as exc:
            assert exc.code == code, (code, exc.message)
        else:
            raise AssertionError(f"{code} was not refused")
    try:
        client.rerun_plan("done-1", from_step="z")
    except ApiError as exc:
        assert exc.message == "three@1.0.0 has no step `z`; steps: a, b, c"
    assert client.describe("done-1").run == 1  # nothing was written
    assert client.rerun_plan("done-1", from_step="b").reused == ["a"]
