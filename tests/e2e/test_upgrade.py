"""The upgrade check, migration and replay through a real server whose executions have left
memory (--passivate-after): a check reads them from the store and writes nothing; a migration
moves the compatible ones (DefinitionMigrated) and, after a restart, a migrated execution goes
on under the new version with a real worker; a replay shows any point of a run."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import pytest

from orbit_actors.client import ApiError, Client

from .harness import ServerProcess, WorkerProcess, wait_until
from .test_metrics import scrape

V1 = """
workflow: approve-e2e
version: 1.0.0
tasks: {echo: {version: "1"}}
signals: {approve: {type: object, properties: {by: {type: string}}}}
steps:
  - {id: ask, value: asked}
  - {id: wait, await: approve}
output: {by: "${steps.wait.output.by}"}
"""
ADDED_AFTER = V1.replace("version: 1.0.0", "version: 1.1.0").replace(
    "output: {by:",
    '  - {id: thank, task: echo, input: {to: "${steps.wait.output.by}"}}\noutput: {thanked: "${steps.thank.output.to}", by:',
)
INSERTED_BEFORE = V1.replace("version: 1.0.0", "version: 2.0.0").replace(
    "steps:\n", "steps:\n  - {id: audit, value: audited}\n"
)


def resident(server: ServerProcess) -> float:
    return scrape(server)[("orbit_resident_executions", ())]


def passivated(tmp_path: Path, count: int) -> tuple[ServerProcess, list[str]]:
    """A server with ``count`` executions of V1 waiting for `approve`, none in memory."""
    server = ServerProcess(tmp_path, "--passivate-after", "300ms").start()
    ids = [f"ap{n}" for n in range(count)]
    with server.client() as client:
        client.deploy(V1)
        for execution_id in ids:
            client.start("approve-e2e", execution_id=execution_id)
    wait_until(lambda: resident(server) == 0, 30, what="the executions to leave memory")
    return server, ids


def histories(client: Client, ids: list[str]) -> dict[str, int]:
    return {i: len(client.history(i).events) for i in ids}


def test_a_check_pages_through_passivated_executions_and_writes_nothing(tmp_path: Path) -> None:
    server, ids = passivated(tmp_path, 5)
    try:
        with server.client() as client:
            before = histories(client, ids)
            assert client.check("approve-e2e", "1.0.0", ADDED_AFTER).compatible == 5
            first = client.check("approve-e2e", "1.0.0", INSERTED_BEFORE, limit=3)
            assert (first.checked, first.next_cursor is not None) == (3, True)
            rest = client.check("approve-e2e", "1.0.0", INSERTED_BEFORE, cursor=first.next_cursor)
            found = first.incompatible + rest.incompatible
            assert sorted(i.execution_id for i in found) == ids
            assert {(i.first_divergent_seq, i.run) for i in found} == {(3, 1)}
            assert (
                found[0].candidate.startswith("The candidate would skip")
                or "audit" in found[0].candidate
            )
            assert first.candidate.version == "2.0.0"
            assert histories(client, ids) == before
            assert resident(server) == 0
    finally:
        server.stop()


def test_a_check_refuses_bad_candidates_with_the_spec_codes(tmp_path: Path) -> None:
    server, _ = passivated(tmp_path, 1)
    try:
        with server.client() as client:
            refusals = {
                "INVALID_IR": ("1.0.0", "workflow: approve-e2e\nversion: [1\n"),
                "CANDIDATE_NAME_MISMATCH": ("1.0.0", V1.replace("approve-e2e", "other")),
                "WORKFLOW_NOT_FOUND": ("9.9.9", ADDED_AFTER),
            }
            for code, (version, source) in refusals.items():
                with pytest.raises(ApiError) as refused:
                    client.check("approve-e2e", version, source)
                assert refused.value.code == code
            with pytest.raises(ApiError) as invalid:
                client.check("approve-e2e", "1.0.0", "workflow: approve-e2e\nversion: [1\n")
            assert invalid.value.message.startswith("3:1: invalid YAML")
    finally:
        server.stop()


def test_migrated_executions_go_on_under_the_new_version_after_a_restart(tmp_path: Path) -> None:
    server, ids = passivated(tmp_path, 4)
    worker = None
    try:
        with server.client() as client:
            client.deploy(ADDED_AFTER)
            client.deploy(INSERTED_BEFORE)
            with pytest.raises(ApiError) as missing:
                client.migrate("approve-e2e", "1.0.0", "3.0.0")
            assert (missing.value.status, missing.value.code) == (404, "WORKFLOW_NOT_FOUND")
            refused = client.migrate("approve-e2e", "1.0.0", "2.0.0")
            assert refused.migrated == [] and {s.first_divergent_seq for s in refused.skipped} == {
                3
            }
            dry = client.migrate("approve-e2e", "1.0.0", "1.1.0", dry_run=True)
            assert sorted(dry.migrated) == ids and dry.dry_run
            assert {client.describe(i).version for i in ids} == {"1.0.0"}
            done = client.migrate("approve-e2e", "1.0.0", "1.1.0", ids=ids[:3])
            assert sorted(done.migrated) == ids[:3]
            events = client.history(ids[0]).events
            assert events[-1]["type"] == "DefinitionMigrated"
            assert (events[-1]["from_version"], events[-1]["to_version"]) == ("1.0.0", "1.1.0")
        server.kill(signal.SIGKILL)
        server.start()
        worker = WorkerProcess(server, "upgrade-w1")
        with server.client() as client:
            assert client.describe(ids[0]).version == "1.1.0"
            assert client.describe(ids[3]).version == "1.0.0"
            client.signal(ids[0], "approve", {"by": "ann"})
            result = client.wait(ids[0], timeout=30)
            assert (result.status, result.output) == ("completed", {"thanked": "ann", "by": "ann"})
            client.signal(ids[3], "approve", {"by": "bo"})
            assert client.wait(ids[3], timeout=30).output == {"by": "bo"}
    finally:
        if worker is not None:
            worker.stop()
        server.stop()


def test_a_replay_shows_a_point_of_a_run_and_refuses_a_seq_it_does_not_have(
    tmp_path: Path,
) -> None:
    server, ids = passivated(tmp_path, 1)
    try:
        with server.client() as client:
            last = len(client.history(ids[0]).events)
            point = client.replay(ids[0], at=3)
            assert (point.run, point.at, point.last_seq) == (1, 3, last)
            assert point.event["type"] == "StepScheduled" and point.event["step"] == "ask"
            assert [e["type"] for e in point.decided][:2] == ["StepSucceeded", "StepScheduled"]
            end = client.replay(ids[0])
            assert end.at == last and end.state["steps"]["wait"] == "running"
            against = client.replay(ids[0], at=2, definition=INSERTED_BEFORE)
            assert against.diverges_at == 3 and against.decided[0]["step"] == "audit"
            with pytest.raises(ApiError) as outside:
                client.replay(ids[0], at=last + 1)
            assert outside.value.code == "SEQ_OUT_OF_RANGE"
            assert outside.value.message == f"run 1 has events 1 to {last}"
            raw = httpx.get(f"{server.url}/v1/executions/{ids[0]}/replay", params={"at": 0})
            assert raw.status_code == 400
            assert len(client.history(ids[0]).events) == last
    finally:
        server.stop()
