"""Real processes for end-to-end tests: an ``orbit server`` on a free loopback port with its own
SQLite file (or the PostgreSQL database its ``--database-url`` names), and worker processes running :mod:`tests.e2e.e2e_workers` (or an example worker)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from orbit_actors.client import Client

ROOT = Path(__file__).resolve().parents[2]
READY = re.compile(r"Orbit is ready on (https?://\S+)")
SERVER = os.environ.get("ORBIT_E2E_SERVER", "orbit")
"""Which server the e2e tests start: ``ORBIT_E2E_SERVER=hypercorn`` runs them on hypercorn."""
SERVER_ARGS = ["--server", SERVER] if SERVER != "orbit" else []


def _environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


class ServerProcess:
    """``orbit server`` as a subprocess; ``url`` once ready. Restartable on the same file."""

    def __init__(self, folder: Path, *args: str) -> None:
        self.folder = folder
        self.db = folder / "orbit.db"
        self.args = [*args, *SERVER_ARGS]
        self.process: subprocess.Popen[str] | None = None
        self.url = ""
        self.port = 0
        self._log: IO[str] | None = None
        self.env: dict[str, str] = {}  # extra environment of the next start (ORBIT_CRASH_AT)

    def start(self, timeout: float = 30.0) -> ServerProcess:
        """Start (on the port of the previous start, if any) and wait until ready."""
        bind = f"127.0.0.1:{self.port}"
        database = [] if "--database-url" in self.args else ["--db", str(self.db)]
        command = [sys.executable, "-m", "orbit_actors.cli", "server", *database,
                   "--bind", bind, "--log-level", "warning", *self.args]  # fmt: skip
        self._log = open(self.folder / "server.log", "a")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=self._log, text=True,
            env=_environment(self.env),
            cwd=self.folder,
        )  # fmt: skip
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"the server exited: {self.log_text()[-3000:]}")
            found = READY.search(line)
            if found:
                self.url = found.group(1)
                self.port = int(self.url.rsplit(":", 1)[1])
                return self
        raise RuntimeError("the server did not become ready")

    @property
    def ws_url(self) -> str:
        """The worker gateway's base URL."""
        return "ws" + self.url[4:]

    def client(self, token: str | None = None, verify: str | bool = True) -> Client:
        """An API client of this server."""
        return Client(self.url, timeout=30, token=token, verify=verify)

    def kill(self, sig: int = signal.SIGKILL) -> int:
        """Send ``sig`` and wait for the process to end; returns its exit code."""
        assert self.process is not None
        self.process.send_signal(sig)
        code = self.process.wait(timeout=30)
        if self._log is not None:
            self._log.close()
        return code

    def stop(self) -> None:
        """End the process if it still runs."""
        if self.process is not None and self.process.poll() is None:
            self.kill(signal.SIGKILL)

    def log_text(self) -> str:
        """What the server wrote to stderr."""
        path = self.folder / "server.log"
        return path.read_text() if path.exists() else ""


class WorkerProcess:
    """A worker subprocess (``orbit worker MODULE:ATTR``)."""

    def __init__(self, server: ServerProcess, worker_id: str, target: str = "tests.e2e.e2e_workers:worker",
                 env: dict[str, str] | None = None) -> None:  # fmt: skip
        extra = {"ORBIT_URL": server.url, "ORBIT_WORKER_ID": worker_id, **(env or {})}
        log = open(server.folder / f"worker-{worker_id}.log", "a")  # noqa: SIM115
        self.worker_id = worker_id
        self.process = subprocess.Popen(
            [sys.executable, "-m", "orbit_actors.cli", "worker", target],
            stdout=log, stderr=log, env=_environment(extra), cwd=ROOT,
        )  # fmt: skip
        self._log = log

    def kill(self, sig: int = signal.SIGKILL) -> int:
        """Send ``sig`` and wait."""
        self.process.send_signal(sig)
        code = self.process.wait(timeout=60)
        self._log.close()
        return code

    def stop(self) -> None:
        """End the process if it still runs."""
        if self.process.poll() is None:
            self.kill(signal.SIGKILL)


def wait_until(condition: object, timeout: float = 30.0, what: str = "condition") -> None:
    """Poll ``condition()`` (a callable) until true: only for observing other processes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
