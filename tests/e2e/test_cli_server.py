"""The ``orbit`` command against a real server: tables, ``--json``, exit codes, one-line errors."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from .conftest import BREAKS as FAILS
from .conftest import ECHO3
from .harness import ROOT, ServerProcess, WorkerProcess

WAITS = """
workflow: waits
version: 1.0.0
signals: {go: {type: object}}
queries: {where: steps.w.status}
steps: [{id: w, await: go}]
output: "${steps.w.output}"
"""


def orbit(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orbit_actors.cli", *args], capture_output=True, text=True,
        env={"ORBIT_URL": server.url, "PATH": "/usr/bin:/bin"}, cwd=ROOT, timeout=60,
    )  # fmt: skip


def test_the_cli_deploys_starts_follows_and_shows(
    tmp_path: Path, server: ServerProcess, workers: list[WorkerProcess]
) -> None:
    for name, source in (("three.yaml", ECHO3), ("breaks.yaml", FAILS), ("waits.yaml", WAITS)):
        (tmp_path / name).write_text(source)
    deployed = orbit(server, "deploy", *(str(p) for p in sorted(tmp_path.glob("*.yaml"))))
    assert deployed.returncode == 0 and deployed.stdout.count("created") == 3
    workers.append(WorkerProcess(server, "cli"))

    done = orbit(server, "start", "three", "--input", '{"n": 7}', "--id", "cli-1", "--wait")
    assert done.returncode == 0, done.stderr
    assert "cli-1: completed" in done.stdout and '"n": 7' in done.stdout
    assert orbit(server, "start", "breaks", "--wait").returncode == 1

    shown = orbit(server, "show", "cli-1")
    assert "three@1.0.0" in shown.stdout and "succeeded" in shown.stdout
    history = orbit(server, "show", "cli-1", "--history")
    assert "WorkflowCreated" in history.stdout and "WorkflowCompleted" in history.stdout
    listed = json.loads(orbit(server, "list", "--json", "--workflow", "three").stdout)
    assert [e["execution_id"] for e in listed["executions"]] == ["cli-1"]
    assert "cli" in orbit(server, "workers").stdout

    waiting = orbit(server, "start", "waits").stdout.strip()
    assert json.loads(orbit(server, "query", waiting, "where", "--json").stdout) == {
        "value": "running"
    }
    assert orbit(server, "signal", waiting, "go", "--payload", '{"ok": true}').returncode == 0
    assert orbit(server, "cancel", waiting).returncode in (0, 1)  # it may have finished already


def test_a_refusal_is_one_line_and_a_non_zero_exit(server: ServerProcess) -> None:
    refused = orbit(server, "start", "ghost")
    assert refused.returncode == 1
    assert refused.stderr.strip() == "error: WORKFLOW_NOT_FOUND: workflow ghost is not registered"
    missing = orbit(server, "show", "nobody")
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    bad_json = orbit(server, "start", "three", "--input", "{oops")
    assert bad_json.returncode == 1 and bad_json.stderr.startswith(
        "error: INVALID_REQUEST: --input"
    )


def test_an_unreachable_server_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "orbit_actors.cli", "list"], capture_output=True, text=True,
        env={"ORBIT_URL": "http://127.0.0.1:1", "PATH": "/usr/bin:/bin"}, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert result.returncode == 3 and result.stderr.startswith("error: UNAVAILABLE: cannot reach")


def test_a_server_that_cannot_bind_says_so_in_one_line(
    server: ServerProcess, tmp_path: Path
) -> None:
    for bind, message in ((f"127.0.0.1:{server.port}", "error: cannot serve: Address already in use"),
                          ("nonsense", "error: --bind takes HOST:PORT")):  # fmt: skip
        result = subprocess.run(
            [sys.executable, "-m", "orbit_actors.cli", "server", "--db", str(tmp_path / "x.db"),
             "--bind", bind], capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 1 and result.stderr.startswith(message), result.stderr
        assert "Traceback" not in result.stderr


def test_a_second_server_on_the_same_file_exits_naming_the_first(
    server: ServerProcess, tmp_path: Path
) -> None:
    assert server.process is not None
    result = subprocess.run(
        [sys.executable, "-m", "orbit_actors.cli", "server", "--db", str(server.db), "--bind",
         "127.0.0.1:0"], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        f"error: {server.db} is already served by another Orbit server (pid "
        f"{server.process.pid}); stop it first, or give this server another --db"
    )
    assert server.client().ready()  # the first goes on


def test_a_sigkilled_servers_lock_is_gone_with_it(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path).start()
    server.kill(signal.SIGKILL)
    server.start()  # on the same file, at once
    try:
        assert server.client().ready()
    finally:
        server.stop()


def test_orbit_servers_lists_the_one_server_of_a_sqlite_file(server: ServerProcess) -> None:
    shown = orbit(server, "servers")
    assert shown.returncode == 0 and server.url in shown.stdout and "online" in shown.stdout
    listed = json.loads(orbit(server, "servers", "--json").stdout)["servers"]
    assert len(listed) == 1 and listed[0]["address"] == server.url and listed[0]["online"]
