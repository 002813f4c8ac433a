"""Operating executions in shared mode: three real servers on one PostgreSQL; pause, unpause,
terminate and rerun sent to a server that does not own the execution are carried out by the
owner (or, for a finished execution, by the server asked)."""

from __future__ import annotations

from pathlib import Path

from .harness import WorkerProcess, wait_until
from .test_cluster import Cluster, logged
from .test_cluster import cluster as cluster  # the fixture

STEPS = """
workflow: steps
version: 1.0.0
tasks: {echo: {version: "1"}}
signals: {go: {type: object}}
steps:
  - {id: first, task: echo, input: {n: 1}}
  - {id: wait, await: go}
  - {id: last, task: echo, input: {n: 2}}
output: {n: "${steps.last.output.n}"}
"""


def test_an_execution_owned_elsewhere_is_paused_terminated_and_rerun(
    cluster: Cluster, workers: list[WorkerProcess], tmp_path: Path
) -> None:
    owner, worker_side, asked = (server.start() for server in cluster.servers)
    log = tmp_path / "tasks.jsonl"
    workers.append(WorkerProcess(worker_side, "elsewhere", env={"E2E_LOG": str(log)}))
    with owner.client() as a, asked.client() as c:
        a.deploy(STEPS)
        a.start("steps", execution_id="far")
        wait_until(lambda: log.exists() and log.read_text().strip(), 30, what="the first task")
        wait_until(
            lambda: any(u.step == "wait" for u in c.describe("far").units), 30, what="the await"
        )
        owner_id = cluster.server_id(owner)
        assert cluster.sql("SELECT owner FROM executions WHERE execution_id = 'far'") == [
            (owner_id,)
        ]
        assert c.pause("far", "look").paused  # forwarded to the owner
        assert [e.execution_id for e in c.executions(paused=True).executions] == ["far"]
        assert not c.unpause("far").paused
        assert c.terminate("far", "stop it").status == "terminated"
        assert a.history("far").events[-1]["type"] == "WorkflowTerminated"

        plan = c.rerun_plan("far")
        assert (plan.reused, plan.rerun) == (["first"], ["wait", "last"])
        assert c.rerun("far").run == 2
        assert a.signal("far", "go", {}) > 0  # to the server that runs the rerun
        done = a.result("far", timeout=60)
        assert (done.status, done.run, done.output) == ("completed", 2, {"n": 2})
    keys = [line["key"] for line in logged(log)]
    assert keys == ["far/1/first", "far/2/last"]  # first was reused, never dispatched again


GATE = """
workflow: gate
version: 1.0.0
signals: {go: {}}
steps:
  - {id: wait, await: go}
"""


def test_a_batch_acts_through_each_owner_and_is_taken_over_when_its_server_dies(
    cluster: Cluster,
) -> None:
    first, _, batcher = cluster.servers
    batcher.args += ["--batch-rate", "4"]
    for server in cluster.servers:
        server.start()
    ids = []
    for n, server in enumerate(cluster.servers):
        with server.client() as client:
            if n == 0:
                client.deploy(GATE)
            ids += [client.start("gate", execution_id=f"s{n}-{i}").execution_id for i in range(8)]
    owners = {row[0] for row in cluster.sql("SELECT DISTINCT owner FROM executions")}
    assert len(owners) == 3  # each server owns the executions it started
    with batcher.client() as client:
        made = client.create_batch("terminate", workflow="gate", reason="recall")
        assert made.matched == 24
        wait_until(lambda: client.batch(made.batch_id).done >= 10, 60, what="10 done")
    batcher.kill()  # its batch is taken over with its executions
    with first.client() as client:
        wait_until(lambda: client.batch(made.batch_id).state == "completed", 120, "the batch")
        ended = client.batch(made.batch_id)
        assert (ended.done, ended.failed) == (24, [])
        for execution_id in ids:
            events = client.history(execution_id).events
            assert [e["type"] for e in events].count("WorkflowTerminated") == 1, execution_id
