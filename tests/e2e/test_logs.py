"""Structured logs from a real server: one line per significant event with its fields, JSON with
``--log-format json``, and no payloads."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from orbit_actors.observe.logformat import HumanFormatter, JsonFormatter

from .conftest import ECHO3
from .harness import ServerProcess, WorkerProcess, wait_until

FAILS = """
workflow: breaks
version: 1.0.0
tasks: {fail: {version: "1"}}
steps: [{id: f, task: fail, input: {code: BROKEN, secret: "${input.secret}"}}]
"""
SECRET = "s3cr3t-payload-value"


def test_json_logs_carry_one_line_per_significant_event_and_no_payload(
    tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    server = ServerProcess(tmp_path, "--log-level", "info", "--log-format", "json").start()
    try:
        with server.client() as client:
            client.deploy(ECHO3)
            client.deploy(FAILS)
            workers.append(WorkerProcess(server, "logged"))
            done = client.start("three", input={"n": SECRET}).execution_id
            broken = client.start("breaks", input={"secret": SECRET}).execution_id
            assert client.wait(done, timeout=30).status == "completed"
            assert client.wait(broken, timeout=30).status == "failed"
        wait_until(lambda: "execution failed" in server.log_text(), what="the log line")
    finally:
        server.stop()
    text = server.log_text()
    assert SECRET not in text
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    by_message: dict[str, list[dict[str, object]]] = {}
    for line in lines:
        by_message.setdefault(line["message"], []).append(line)
    assert {line["execution_id"] for line in by_message["execution started"]} >= {done, broken}
    (completed,) = [x for x in by_message["execution completed"] if x["execution_id"] == done]
    assert completed["workflow"] == "three" and completed["level"] == "info"
    (attempt,) = [x for x in by_message["attempt failed"] if x["execution_id"] == broken]
    assert attempt["step"] == "f" and attempt["attempt"] == 1 and attempt["code"] == "BROKEN"
    (failed,) = by_message["execution failed"]
    assert failed["code"] == "BROKEN" and failed["level"] == "warning"
    assert by_message["worker registered"][0]["worker_id"] == "logged"


def test_human_lines_put_the_fields_after_the_message() -> None:
    record = logging.LogRecord(
        "orbit.execution", logging.INFO, __file__, 1, "execution completed", None, None
    )
    record.orbit = {"execution_id": "e-1", "workflow": "wf"}
    line = HumanFormatter().format(record)
    assert line.endswith("INFO  orbit.execution: execution completed execution_id=e-1 workflow=wf")
    assert json.loads(JsonFormatter().format(record))["execution_id"] == "e-1"
