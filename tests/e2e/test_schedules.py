"""Schedules through the real server, a real worker process and a real SQLite file: the API's
answers and refusals, triggers with overlap, a cron occurrence missed while the server was killed
firing once after the restart, and the ``orbit schedule`` commands."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest

from orbit_actors.client import ApiError

from .conftest import ECHO3
from .harness import ServerProcess, WorkerProcess, wait_until
from .test_cli_server import WAITS, orbit

OCCURRENCE = re.compile(r"every-minute:\d{8}T\d{4}00Z")


def test_a_minute_missed_while_the_server_was_killed_fires_once_after_the_restart(
    tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    server = ServerProcess(tmp_path).start()
    try:
        with server.client() as client:
            client.deploy(ECHO3)
            created = client.create_schedule(
                "every-minute", "* * * * *", "three", input={"n": 5}, timezone="Europe/Berlin"
            )
            assert created.created and created.last_execution_ids == []
            first = created.next_occurrences_ms[0]
            assert first % 60_000 == 0 and first > time.time() * 1000
        server.kill()
        time.sleep(max(0.0, first / 1000 - time.time()) + 1.5)  # the minute passes while down
        server.start()
        workers.append(WorkerProcess(server, "sched"))
        with server.client() as client:
            wait_until(lambda: client.schedule("every-minute").last_execution_ids, 30,
                       "the missed occurrence fired")  # fmt: skip
            (execution_id,) = client.schedule("every-minute").last_execution_ids
            assert OCCURRENCE.fullmatch(execution_id)
            summary = client.wait(execution_id, timeout=30)
            assert (summary.status, summary.schedule_id) == ("completed", "every-minute")
            assert client.describe(execution_id).output == {"n": 5}
            ids = [e.execution_id for e in client.executions().executions]
            assert ids.count(execution_id) == 1
    finally:
        server.stop()


def test_the_schedule_api_answers_and_refuses_as_the_spec_says(server: ServerProcess) -> None:
    with server.client() as client:
        client.deploy(WAITS)
    body = {"schedule_id": "nightly", "cron": "0 3 * * *", "workflow": "waits",
            "timezone": "Europe/Berlin"}  # fmt: skip
    api = httpx.Client(base_url=server.url, timeout=30)
    created = api.post("/v1/schedules", json=body)
    assert created.status_code == 201
    shown = created.json()
    assert {k: shown[k] for k in ("schedule_id", "cron", "timezone", "workflow", "version",
                                  "input", "overlap", "paused")} == {
        **body, "version": None, "input": {}, "overlap": "skip", "paused": False,
    }  # fmt: skip
    assert len(shown["next_occurrences_ms"]) == 5 and shown["last_execution_ids"] == []
    assert api.post("/v1/schedules", json=body).status_code == 200
    conflict = api.post("/v1/schedules", json={**body, "cron": "0 4 * * *"})
    assert (conflict.status_code, conflict.json()["error"]["code"]) == (409, "SCHEDULE_EXISTS")

    for field, bad in (("cron", "0 25 * * *"), ("timezone", "Europe/Atlantis")):
        refused = api.post("/v1/schedules", json={**body, "schedule_id": "x", field: bad})
        assert refused.status_code == 400
        error = refused.json()["error"]
        assert error["code"] == "INVALID_SCHEDULE" and error["message"].startswith(f"{field}: ")
    unknown = api.post("/v1/schedules", json={**body, "schedule_id": "x", "workflow": "nope"})
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "WORKFLOW_NOT_FOUND")
    assert [s["schedule_id"] for s in api.get("/v1/schedules").json()["schedules"]] == ["nightly"]

    paused = api.post("/v1/schedules/nightly/pause")
    assert paused.status_code == 200 and paused.json()["paused"]
    fired = api.post("/v1/schedules/nightly/trigger")  # a trigger ignores paused
    assert fired.status_code == 202
    execution_id = fired.json()["execution_id"]
    assert re.fullmatch(r"nightly:\d{8}T\d{6}Z", execution_id)
    time.sleep(1.1)  # the next second is another occurrence, skipped while the first waits
    skipped = api.post("/v1/schedules/nightly/trigger")
    assert (skipped.status_code, skipped.json()["error"]["code"]) == (409, "OVERLAP_SKIPPED")
    assert (
        api.post(f"/v1/executions/{execution_id}/signals/go", json={"payload": {}}).status_code
        == 202
    )
    assert api.get(f"/v1/executions/{execution_id}/wait").json()["status"] == "completed"
    assert api.post("/v1/schedules/nightly/trigger").status_code == 202
    resumed = api.post("/v1/schedules/nightly/resume").json()
    assert not resumed["paused"] and len(resumed["last_execution_ids"]) == 2

    assert api.delete("/v1/schedules/nightly").status_code == 204
    for method, path in (("GET", ""), ("DELETE", ""), ("POST", "/pause"), ("POST", "/trigger")):
        gone = api.request(method, f"/v1/schedules/nightly{path}")
        assert (gone.status_code, gone.json()["error"]["code"]) == (404, "SCHEDULE_NOT_FOUND")
    assert api.get(f"/v1/executions/{execution_id}").json()["schedule_id"] == "nightly"


def test_the_orbit_schedule_commands(tmp_path: Path, server: ServerProcess) -> None:
    (tmp_path / "waits.yaml").write_text(WAITS)
    assert orbit(server, "deploy", str(tmp_path / "waits.yaml")).returncode == 0
    made = orbit(server, "schedule", "create", "hourly", "--cron", "@hourly", "--workflow", "waits",
                 "--overlap", "allow")  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "hourly: created" in made.stdout and "next" in made.stdout
    assert "hourly" in orbit(server, "schedule", "list").stdout
    triggered = orbit(server, "schedule", "trigger", "hourly").stdout.strip()
    assert triggered.startswith("hourly:")
    shown = json.loads(orbit(server, "schedule", "show", "hourly", "--json").stdout)
    assert shown["last_execution_ids"] == [triggered]
    assert orbit(server, "schedule", "pause", "hourly").stdout.strip() == "hourly: paused"
    assert orbit(server, "schedule", "resume", "hourly").stdout.strip() == "hourly: resumed"
    assert orbit(server, "schedule", "delete", "hourly").returncode == 0
    missing = orbit(server, "schedule", "show", "hourly")
    assert missing.returncode == 1
    assert missing.stderr.strip() == "error: SCHEDULE_NOT_FOUND: schedule `hourly` not found"
    bad = orbit(server, "schedule", "create", "x", "--cron", "@often", "--workflow", "waits")
    assert bad.returncode == 1 and "INVALID_SCHEDULE: cron: " in bad.stderr


def test_a_client_sees_schedule_errors_as_api_errors(server: ServerProcess) -> None:
    with server.client() as client, pytest.raises(ApiError) as caught:
        client.trigger_schedule("nope")
    assert (caught.value.code, caught.value.status) == ("SCHEDULE_NOT_FOUND", 404)
