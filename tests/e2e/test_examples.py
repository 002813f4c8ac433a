"""Every example runs to completion through a real server and the examples' real worker."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import pytest

from orbit_actors.cli import deploy_paths

from .harness import ROOT, ServerProcess, WorkerProcess

EXAMPLES = ROOT / "examples"


@pytest.fixture
def examples_server(tmp_path: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path, "--enable-http-adapter").start()
    worker = WorkerProcess(server, "examples", target="examples.workers:worker")
    with server.client() as client:
        deploy_paths(client, sorted(EXAMPLES.glob("*.yaml")), quiet=True)
    yield server
    worker.stop()
    server.stop()


def _input(name: str) -> Any:
    return json.loads((EXAMPLES / "inputs" / f"{name}.json").read_text())


@pytest.mark.parametrize(
    ("workflow", "inputs", "expected"),
    [
        ("order-saga", "order_saga", {"order_id": "A-1001"}),
        ("image-batch", "batch", {"resized": 4}),
        ("countdown", "countdown", {"done": True}),
        ("invoice", "invoice", None),
        ("month-end", "month_end", None),
    ],
)
def test_an_example_runs_to_completion(
    examples_server: ServerProcess, workflow: str, inputs: str, expected: dict[str, Any] | None
) -> None:
    with examples_server.client() as client:
        execution_id = client.start(workflow, input=_input(inputs)).execution_id
        assert client.wait(execution_id, timeout=60).status == "completed"
        output = client.describe(execution_id).output
    for key, value in (expected or {}).items():
        assert output[key] == value


def test_the_order_saga_compensates_a_declined_charge(examples_server: ServerProcess) -> None:
    order = {**_input("order_saga"), "amount": 20_000}
    with examples_server.client() as client:
        execution_id = client.start("order-saga", input=order).execution_id
        summary = client.wait(execution_id, timeout=60)
        detail = client.describe(execution_id)
    assert summary.status == "failed"
    assert detail.error is not None and detail.error.code == "CARD_DECLINED"
    assert any(u.step == "tell_ops" and u.status == "succeeded" for u in detail.units)


def test_the_approval_waits_for_its_signal_and_answers_its_query(
    examples_server: ServerProcess,
) -> None:
    with examples_server.client() as client:
        execution_id = client.start("approval", input=_input("approval")).execution_id
        assert client.query(execution_id, "status") in ("not asked yet", "waiting for a decision")
        client.signal(execution_id, "decision", {"approved": True, "by": "grace"})
        assert client.wait(execution_id, timeout=60).status == "completed"
        output = client.describe(execution_id).output
        assert client.query(execution_id, "status") == "approved by grace"
    assert output["approved"] is True and output["po_number"].startswith("po-")


class _Echo(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_the_webhook_example_posts_through_the_builtin_http_adapter(
    examples_server: ServerProcess,
) -> None:
    httpd = HTTPServer(("127.0.0.1", 0), _Echo)
    Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/hook"
    try:
        with examples_server.client() as client:
            started = client.start("webhook", input={"url": url, "event": {"kind": "ping"}})
            assert client.wait(started.execution_id, timeout=60).status == "completed"
            output = client.describe(started.execution_id).output
    finally:
        httpd.shutdown()
    assert output["status"] == 200
    assert output["echoed"] == {"event": {"kind": "ping"}, "sent_by": "orbit"}


def test_one_command_runs_an_example_for_real(tmp_path: Path) -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "run.py"), "invoice"], capture_output=True, text=True,
        cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert ": completed" in result.stdout and "WorkflowCompleted" in result.stdout
    assert (tmp_path / ".orbit" / "examples.db").exists()
