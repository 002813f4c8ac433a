"""Structured logs from a real server: one line per significant event with its fields, JSON with
``--log-format json``, and no payloads."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

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
REPORTS = """
workflow: reports
version: 1.0.0
tasks: {fail: {version: "1"}}
steps: [{id: f, task: fail, input: {code: "${input.code}"}}]
"""
FORGED = "2026-12-05T00:00:00.000Z INFO  orbit.execution: execution completed execution_id=forged"
HOSTILE_CODE = f"BROKEN\n{FORGED}\r{FORGED}\x1b[31m\u2028{FORGED}\x85{FORGED}\x1b[0m"
"""An error code with every kind of line break Python's ``splitlines`` knows and a colour."""
REPORTED = ["attempt failed", "step failed", "execution failed"]
RECORD_START = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z [A-Z]+ +[\w.]+: ")


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


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_an_error_code_a_worker_reports_cannot_forge_a_log_line_or_colour_it(
    tmp_path: Path, workers: list[WorkerProcess], log_format: str
) -> None:
    server = ServerProcess(tmp_path, "--log-level", "info", "--log-format", log_format).start()
    try:
        with server.client() as client:
            client.deploy(REPORTS)
            workers.append(WorkerProcess(server, "reporter"))
            broken = client.start("reports", input={"code": HOSTILE_CODE}).execution_id
            assert client.wait(broken, timeout=30).status == "failed"
        wait_until(lambda: "execution failed" in server.log_text(), what="the log line")
    finally:
        server.stop()
    text = (tmp_path / "server.log").read_bytes().decode()  # no newline translation
    assert "\x1b" not in text
    lines = text.splitlines()  # at every line break: \n, \r, \x85, \u2028...
    if log_format == "json":
        entries = [json.loads(line) for line in lines]  # every line is one whole object
        codes = [(e["message"], e["code"]) for e in entries if "forged" in e.get("code", "")]
        assert codes == [(what, HOSTILE_CODE) for what in REPORTED]
    else:
        assert all(RECORD_START.match(line) for line in lines), lines
        reported = [RECORD_START.sub("", line, count=1) for line in lines if "forged" in line]
        assert [line.split(" execution_id")[0] for line in reported] == REPORTED
        assert all("code=BROKEN\\n2026-12-05T00:00:00.000Z INFO" in line for line in reported)
