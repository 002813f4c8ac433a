"""Passivation through a real server: executions waiting on a signal leave memory, answer a
query and a signal as before, and after a SIGKILL the server is ready without bringing them
back; one is brought back when a signal needs it."""

from __future__ import annotations

import signal
from pathlib import Path

from .harness import ServerProcess, wait_until
from .test_metrics import scrape

APPROVAL = """
workflow: approval-e2e
version: 1.0.0
signals: {approve: {type: object}}
queries: {stage: 'steps.wait.output == null ? "waiting" : "approved"'}
steps: [{id: wait, await: approve}]
output: "${steps.wait.output}"
"""


def gauge(server: ServerProcess, name: str) -> float:
    return scrape(server)[(name, ())]


def test_waiting_executions_leave_memory_and_answer_as_before(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path, "--passivate-after", "300ms").start()
    try:
        with server.client() as client:
            client.deploy(APPROVAL)
            for n in range(20):
                client.start("approval-e2e", execution_id=f"a{n}")
            wait_until(lambda: gauge(server, "orbit_resident_executions") == 0, 30,
                       what="the executions to leave memory")  # fmt: skip
            assert gauge(server, "orbit_active_executions") == 20
            assert client.query("a3", "stage") == "waiting"
            assert client.describe("a4").units[0].status == "waiting"
            client.signal("a5", "approve", {"by": "ann"})
            done = client.result("a5", timeout=30)
            assert (done.status, done.output) == ("completed", {"by": "ann"})
            client.cancel("a6", "not needed")
            assert client.result("a6", timeout=30).status == "cancelled"
    finally:
        server.stop()


def test_after_a_sigkill_the_server_is_ready_without_replaying_what_waits(
    tmp_path: Path,
) -> None:
    server = ServerProcess(tmp_path).start()
    try:
        with server.client() as client:
            client.deploy(APPROVAL)
            for n in range(200):
                client.start("approval-e2e", execution_id=f"k{n}")
        server.kill(signal.SIGKILL)
        server.start()
        assert gauge(server, "orbit_resident_executions") == 0
        assert gauge(server, "orbit_active_executions") == 200
        with server.client() as client:
            client.signal("k42", "approve", {"by": "bo"})
            assert client.result("k42", timeout=30).output == {"by": "bo"}
            assert client.query("k7", "stage") == "waiting"
        assert gauge(server, "orbit_resident_executions") <= 2
    finally:
        server.stop()
