"""``/metrics`` after real executions through a real server and worker: the values add up."""

from __future__ import annotations

from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from .conftest import ECHO3
from .harness import ServerProcess, WorkerProcess, wait_until

FAILS = """
workflow: breaks
version: 1.0.0
tasks: {fail: {version: "1"}}
steps: [{id: f, task: fail, input: {code: BROKEN}}]
"""


def scrape(server: ServerProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    samples = {}
    for family in text_string_to_metric_families(httpx.get(f"{server.url}/metrics").text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def test_metrics_count_executions_steps_latencies_and_workers(
    tmp_path: Path, server: ServerProcess, workers: list[WorkerProcess]
) -> None:
    with server.client() as client:
        client.deploy(ECHO3)
        client.deploy(FAILS)
        workers.append(WorkerProcess(server, "metered"))
        wait_until(lambda: any(w.online for w in client.workers()), what="the worker")
        for n in range(5):
            started = client.start("three", input={"n": n})
            assert client.wait(started.execution_id, timeout=30).status == "completed"
        assert client.wait(client.start("breaks").execution_id, timeout=30).status == "failed"
    m = scrape(server)
    assert m[("orbit_ready", ())] == 1
    assert m[("orbit_executions_started_total", (("workflow", "three"),))] == 5
    assert (
        m[("orbit_executions_finished_total", (("status", "completed"), ("workflow", "three")))]
        == 5
    )
    assert (
        m[("orbit_executions_finished_total", (("status", "failed"), ("workflow", "breaks")))] == 1
    )
    assert m[("orbit_step_outcomes_total", (("outcome", "succeeded"), ("workflow", "three")))] == 15
    assert m[("orbit_step_outcomes_total", (("outcome", "failed"), ("workflow", "breaks")))] == 1
    assert m[("orbit_step_schedule_to_start_seconds_count", (("workflow", "three"),))] == 15
    assert m[("orbit_step_start_to_close_seconds_count", (("workflow", "three"),))] == 15
    assert m[("orbit_store_commit_seconds_count", ())] >= 20
    assert m[("orbit_workers_connected", ())] == 1
    assert m[("orbit_active_executions", ())] == 0
    assert m[("orbit_store_commits_total", ())] >= m[("orbit_store_batches_total", ())] > 0
    assert not any("execution_id" in dict(labels) for _, labels in m)
