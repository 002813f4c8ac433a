"""Batches end to end: a real server on a SQLite file, a real worker process, the API, the
clients and ``orbit batch`` — each action, the dry run, the refusals; and a batch over 10,000
executions that survives a SIGKILL of the server with every execution acted on once."""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

import httpx
import pytest
import trio

from orbit_actors.api.batch_models import Batch
from orbit_actors.client import Client
from orbit_actors.runtime import RuntimeConfig, open_runtime
from orbit_actors.store import open_sqlite_store

from .harness import ServerProcess, WorkerProcess, wait_until
from .test_cli_server import orbit

GATE = """
workflow: gate
version: 1.0.0
tasks: {echo: {version: "1"}}
signals: {go: {}}
steps:
  - {id: wait, await: go}
  - {id: e, task: echo, input: {n: 1}}
"""


def finished(client: Client, batch_id: str, timeout: float = 60) -> Batch:
    """The batch once it is no longer running."""
    wait_until(lambda: client.batch(batch_id).state != "running", timeout, f"batch {batch_id}")
    return client.batch(batch_id)


def test_every_action_the_dry_run_and_the_cli(
    server: ServerProcess, workers: list[WorkerProcess], tmp_path: Path
) -> None:
    workers.append(WorkerProcess(server, "w1"))
    with server.client() as client:
        client.deploy(GATE)
        ids = [client.start("gate", execution_id=f"g{i}").execution_id for i in range(6)]

        preview = json.loads(orbit(server, "batch", "pause", "--workflow", "gate", "--dry-run",
                                   "--json").stdout)  # fmt: skip
        assert preview == {"matched": 6, "sample": ids}
        assert client.batches().batches == []  # the dry run wrote nothing

        made = client.create_batch("pause", workflow="gate", reason="look first")
        assert made.matched == 6
        assert finished(client, made.batch_id).done == 6
        assert len(client.executions(paused=True).executions) == 6

        made_by_cli = orbit(server, "batch", "unpause", "--id", ids[0], "--id", ids[1], "--json")
        first = json.loads(made_by_cli.stdout)["batch_id"]
        assert finished(client, first).done == 2
        rest = finished(client, client.create_batch("unpause", workflow="gate").batch_id)
        assert (rest.done, rest.failed_count) == (4, 2)
        assert {(f.execution_id, f.code) for f in rest.failed} == {
            (ids[0], "NOT_PAUSED"), (ids[1], "NOT_PAUSED")
        }  # fmt: skip

        terminated = client.create_batch("terminate", ids=ids[:3], reason="wrong orders")
        assert finished(client, terminated.batch_id).done == 3
        assert client.history(ids[0]).events[-1]["reason"] == "wrong orders"

        rerun = client.create_batch("rerun", status="terminated", workflow="gate")
        assert finished(client, rerun.batch_id).done == 3
        for execution_id in ids[:3]:
            client.signal(execution_id, "go", {})
            assert client.wait(execution_id, timeout=30).status == "completed"  # by the worker

        cancelled = client.create_batch("cancel", status="running", workflow="gate")
        assert cancelled.matched == 3
        assert finished(client, cancelled.batch_id).done == 3
        assert {client.describe(i).status for i in ids[3:]} == {"cancelled"}

        shown = json.loads(orbit(server, "batch", "show", cancelled.batch_id, "--json").stdout)
        assert (shown["action"], shown["state"], shown["matched"]) == ("cancel", "completed", 3)
        listed = orbit(server, "batch", "list")
        assert listed.returncode == 0 and cancelled.batch_id in listed.stdout
        assert len(client.batches().batches) == 6


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "explode", "filter": {"workflow": "gate"}}, "body.action"),
        ({"action": "terminate", "filter": {}}, "body.filter"),
        ({"action": "terminate"}, "body.filter"),
        ({"action": "terminate", "filter": {"status": "sleeping"}}, "body.filter.status"),
        ({"action": "terminate", "filter": {"ids": []}}, "body.filter.ids"),
    ],
)
def test_a_bad_batch_is_refused_naming_the_field_and_writes_nothing(
    server: ServerProcess, body: dict[str, object], field: str
) -> None:
    answer = httpx.post(f"{server.url}/v1/batches", json=body, timeout=30)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "INVALID_REQUEST" and error["message"].startswith(field)
    assert httpx.get(f"{server.url}/v1/batches", timeout=30).json()["batches"] == []


def test_an_unknown_batch_is_404_and_a_completed_one_cannot_be_cancelled(
    server: ServerProcess,
) -> None:
    with server.client() as client:
        client.deploy(GATE)
        made = client.create_batch("terminate", workflow="nothing-matches")
        assert made.matched == 0 and client.batch(made.batch_id).state == "completed"
    again = httpx.post(f"{server.url}/v1/batches/{made.batch_id}/cancel", timeout=30)
    assert again.status_code == 409 and again.json()["error"]["code"] == "BATCH_FINISHED"
    missing = httpx.get(f"{server.url}/v1/batches/batch-nope", timeout=30)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "BATCH_NOT_FOUND"
    stopped = orbit(server, "batch", "stop", "batch-nope")
    assert stopped.returncode == 1 and "BATCH_NOT_FOUND" in stopped.stderr


MANY = 10_000


async def _waiting_executions(db: Path, count: int) -> None:
    """``count`` executions of ``gate`` waiting on their signal, started in-process (cheaply)."""
    async with open_sqlite_store(db) as store, open_runtime(store, RuntimeConfig()) as runtime:
        await runtime.register_definition(GATE)
        limit = trio.CapacityLimiter(200)

        async def start(i: int) -> None:
            async with limit:
                await runtime.start("gate", execution_id=f"m{i}")

        async with trio.open_nursery() as nursery:
            for i in range(count):
                nursery.start_soon(start, i)


async def _terminations(db: Path, count: int) -> Counter[int]:
    """How many executions recorded how many WorkflowTerminated events."""
    found: Counter[int] = Counter()
    async with open_sqlite_store(db) as store:
        ids = [f"m{i}" for i in range(count)]
        for at in range(0, count, 1000):
            histories = await store.histories(ids[at : at + 1000])
            for events in histories.values():
                found[sum(e.type == "WorkflowTerminated" for e in events)] += 1
    return found


def test_a_batch_over_ten_thousand_executions_survives_a_sigkill_acting_on_each_once(
    tmp_path: Path,
) -> None:
    trio.run(_waiting_executions, tmp_path / "orbit.db", MANY)
    server = ServerProcess(tmp_path, "--batch-rate", "5000").start(timeout=120)
    try:
        with server.client() as client:
            made = client.create_batch("terminate", workflow="gate", reason="recall")
            assert made.matched == MANY
            wait_until(lambda: client.batch(made.batch_id).done >= 2000, 300, "2,000 done")
        server.kill(signal.SIGKILL)
        server.start(timeout=120)
        with server.client() as client:
            assert client.batch(made.batch_id).done < MANY  # it was killed in the middle
            ended = finished(client, made.batch_id, timeout=600)
            assert (ended.state, ended.done, ended.failed) == ("completed", MANY, [])
    finally:
        server.stop()
    assert trio.run(_terminations, tmp_path / "orbit.db", MANY) == {1: MANY}
