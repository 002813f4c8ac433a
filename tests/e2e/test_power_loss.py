"""Power loss: the server runs with a shim (``powercut/powercut.c``, LD_PRELOAD) under which its
database files keep only what was synced; a "power cut" SIGKILLs it at a random moment under
load and puts every file back to its last synced contents, dropping each write not yet synced.
With ``synchronous=FULL`` (the default) nothing the server acknowledged is lost over many cuts;
with ``NORMAL`` acknowledged executions are lost (WAL commits are synced only at checkpoints)."""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from .harness import ServerProcess, WorkerProcess
from .test_crash_points import NAPS, deliveries
from .test_durability import succeeded_per_step

SHIM = Path(__file__).parent / "powercut" / "powercut.c"
CUTS = 6
SUFFIXES = ("", "-wal", "-journal")


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shim, compiled (the test skips without a C compiler)."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler to build the power-cut shim")
    built = tmp_path_factory.mktemp("shim") / "powercut.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(built), str(SHIM), "-ldl"],
                   check=True)  # fmt: skip
    return built


class Load:
    """Starts executions one after another, from a thread, until stopped; keeps the ids the
    server acknowledged (201)."""

    def __init__(self, server: ServerProcess, prefix: str) -> None:
        self.server, self.prefix = server, prefix
        self.acknowledged: list[str] = []
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def __enter__(self) -> Load:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            execution_id = f"{self.prefix}-{n}"
            n = self.sent = n + 1
            body = {"workflow": "naps", "input": {"n": execution_id}, "execution_id": execution_id}
            try:
                answer = httpx.post(f"{self.server.url}/v1/executions", json=body, timeout=10)
            except httpx.TransportError:
                continue
            if answer.status_code == 201:
                self.acknowledged.append(execution_id)


def powered(tmp_path: Path, shim: Path, synchronous: str) -> ServerProcess:
    server = ServerProcess(tmp_path, "--synchronous", synchronous, "--session-timeout", "5s")
    server.env = {"LD_PRELOAD": str(shim), "ORBIT_POWERCUT_PREFIX": str(server.db.resolve())}
    return server


def power_cut(server: ServerProcess) -> None:
    """SIGKILL, then every database file back to what was last synced (gone if never)."""
    server.kill(signal.SIGKILL)
    for suffix in SUFFIXES:
        path = server.db.with_name(server.db.name + suffix)
        synced = path.with_name(path.name + ".synced")
        if synced.exists():
            synced.replace(path)
        else:
            path.unlink(missing_ok=True)
    server.db.with_name(server.db.name + "-shm").unlink(missing_ok=True)  # rebuilt from the WAL


def test_with_synchronous_full_no_power_cut_loses_anything_acknowledged(
    tmp_path: Path, shim: Path, workers: list[WorkerProcess]
) -> None:
    seed = random.randrange(2**32)
    moments = random.Random(seed)
    server = powered(tmp_path, shim, "full")
    log = tmp_path / "starts.jsonl"
    acknowledged: list[str] = []
    try:
        server.start()
        with server.client() as client:
            client.deploy(NAPS)
        workers.append(
            WorkerProcess(server, "w", env={"E2E_LOG": str(log), "E2E_CONCURRENCY": "8"})
        )
        for cut in range(CUTS):
            with Load(server, f"c{cut}") as load:
                time.sleep(moments.uniform(0.3, 1.5))  # the random moment of the cut
                power_cut(server)
            acknowledged += load.acknowledged
            server.start()
        with server.client() as client:
            for execution_id in acknowledged:
                status = client.wait(execution_id, timeout=120).status
                assert status == "completed", (execution_id, f"seed {seed}")
                assert succeeded_per_step(client, execution_id) == {"a": 1, "b": 1, "c": 1}
    finally:
        server.stop()
    assert len(acknowledged) >= CUTS, f"seed {seed}: too little load to test anything"
    for seen in deliveries(log).values():  # a task run again: same key, same attempt
        assert len({entry["attempt"] for entry in seen}) == 1, (seen, f"seed {seed}")


def test_with_synchronous_normal_a_power_cut_loses_acknowledged_executions(
    tmp_path: Path, shim: Path, workers: list[WorkerProcess]
) -> None:
    server = powered(tmp_path, shim, "normal")
    try:
        server.start()
        with server.client() as client:
            client.deploy(NAPS)
        workers.append(WorkerProcess(server, "w", env={"E2E_CONCURRENCY": "8"}))
        with Load(server, "n") as load:
            while len(load.acknowledged) < 20:
                time.sleep(0.05)  # observing another process: the load thread's answers
            power_cut(server)
        server.start()
        with server.client() as client:
            kept = {e.execution_id for e in client.executions(limit=1000).executions}
    finally:
        server.stop()
    lost = [e for e in load.acknowledged if e not in kept]
    assert lost, "NORMAL kept every acknowledged execution through the cut"
