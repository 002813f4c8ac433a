"""Run one example end to end, for real: an Orbit server on an embedded SQLite file, the
examples' Python worker, the example deployed and started, followed until it finishes, and its
history printed. Everything it starts is stopped at the end.

    python examples/run.py order_saga
    (or approval, batch, countdown, invoice, month_end, webhook)

The server's database is ``.orbit/examples.db`` (kept, so ``orbit show`` works afterwards against a
server you start on it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

from orbit_actors.api.models import ExecutionResult
from orbit_actors.cli import deploy_paths
from orbit_actors.client import ApiError, Client

HERE = Path(__file__).resolve().parent
WORKFLOWS = {
    "order_saga": "order-saga", "approval": "approval", "batch": "image-batch",
    "countdown": "countdown", "invoice": "invoice", "month_end": "month-end", "webhook": "webhook",
}  # fmt: skip


def start_server(db: Path) -> tuple[subprocess.Popen[str], str]:
    """``orbit server`` on a free loopback port; returns it and its URL once ready."""
    command = [
        sys.executable, "-m", "orbit_actors.cli", "server", "--db", str(db),
        "--bind", "127.0.0.1:0", "--enable-http-adapter", "--log-level", "warning",
    ]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    for line in server.stdout:
        found = re.search(r"ready on (http://\S+)", line)
        if found:
            print(f"server   {found.group(1)}  (database {db})")
            return server, found.group(1)
    raise SystemExit("the server did not start")


def start_worker(url: str) -> subprocess.Popen[bytes]:
    environment = {**os.environ, "ORBIT_URL": url, "PYTHONPATH": str(HERE.parent)}
    command = [sys.executable, "-m", "orbit_actors.cli", "worker", "examples.workers:worker"]
    print("worker   examples/workers.py")
    return subprocess.Popen(command, env=environment, stderr=subprocess.DEVNULL)


class _Receiver(BaseHTTPRequestHandler):
    """The webhook example's target: answers 200 with the body it got."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def example_input(name: str) -> Any:
    if name == "webhook":
        receiver = HTTPServer(("127.0.0.1", 0), _Receiver)
        threading.Thread(target=receiver.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
        return {"url": url, "event": {"kind": "demo"}}
    return json.loads((HERE / "inputs" / f"{name}.json").read_text())


def follow(client: Client, name: str, execution_id: str) -> ExecutionResult:
    """Wait for the end, sending the approval's decision once it is asked for."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if name == "approval" and client.query(execution_id, "status") == "waiting for a decision":
            print("signal   decision {approved: true, by: grace}")
            client.signal(execution_id, "decision", {"approved": True, "by": "grace"})
            name = ""
        try:
            return client.wait(execution_id, timeout=1)
        except ApiError as exc:  # WAIT_TIMEOUT: look again
            if exc.code != "WAIT_TIMEOUT":
                raise
    raise SystemExit(f"{execution_id} did not finish in time")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("example", choices=sorted(WORKFLOWS))
    args = parser.parse_args()
    Path(".orbit").mkdir(exist_ok=True)
    server, url = start_server(Path(".orbit/examples.db"))
    worker = start_worker(url)
    try:
        with Client(url) as client:
            deploy_paths(client, sorted(HERE.glob("*.yaml")), quiet=True)
            workflow = WORKFLOWS[args.example]
            execution_id = client.start(workflow, input=example_input(args.example)).execution_id
            print(f"started  {workflow}  {execution_id}")
            result = follow(client, args.example, execution_id)
            print(f"\n{execution_id}: {result.status}  (run {result.run})")
            for event in client.history(execution_id).events:
                step = event.get("step", "")
                print(f"  {event['seq']:>3}  {event['type']:<22} {step}")
            shown = result.output if result.status == "completed" else result.model_dump()["error"]
            print(json.dumps(shown, indent=2))
            return 0 if result.status == "completed" else 1
    finally:
        worker.terminate()
        server.terminate()
        worker.wait(30)
        server.wait(30)


if __name__ == "__main__":
    raise SystemExit(main())
