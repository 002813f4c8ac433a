"""A full disk: the server's SQLite file on a 2 MiB file system (a tmpfs, so the test needs root
to mount it) that a filler file fills under load. While it is full the server answers
``STORAGE_ERROR`` (503) and the worker's results wait; once the filler is deleted it serves again
without a restart, every execution it acknowledged completes, each step once, and the WAL gives
its space back (a truncating checkpoint after the full-disk error)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .harness import ServerProcess, WorkerProcess, wait_until
from .test_durability import succeeded_per_step

PADDED = """
workflow: padded
version: 1.0.0
tasks: {gate: {version: "1"}, nap: {version: "1"}}
steps:
  - {id: g, task: gate, input: {path: "${input.gate}"}}
  - {id: a, task: nap, input: {seconds: 0.05, pad: "${input.pad}"}}
output: {size: "${size(steps.a.output.pad)}"}
"""
HELD = 8  # executions whose first task waits, so that their results meet the full disk
PAD = "x" * 3000
LEFT_FREE = 400 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a 2 MiB tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)],
                             capture_output=True, text=True)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path, leave: int) -> Path:
    """A file that takes all but ``leave`` bytes of the disk."""
    stats = os.statvfs(disk)
    filler = disk / "filler"
    filler.write_bytes(b"\0" * max(0, stats.f_bavail * stats.f_frsize - leave))
    return filler


def start(server: ServerProcess, execution_id: str, gate: Path) -> httpx.Response:
    body = {"workflow": "padded", "input": {"pad": PAD, "gate": str(gate)},
            "execution_id": execution_id}  # fmt: skip
    return httpx.post(f"{server.url}/v1/executions", json=body, timeout=60)


def test_a_full_disk_answers_storage_error_and_serving_resumes_once_space_is_freed(
    tmp_path: Path, small_disk: Path, workers: list[WorkerProcess]
) -> None:
    server = ServerProcess(tmp_path)
    server.db = small_disk / "orbit.db"
    try:
        server.start()
        with server.client() as client:
            client.deploy(PADDED)
        workers.append(WorkerProcess(server, "w", env={"E2E_CONCURRENCY": "32"}))
        with server.client() as client:  # the held tasks must reach it before the disk fills
            wait_until(lambda: any(w.online for w in client.workers()), what="the worker")
        held, open_gate = tmp_path / "held", tmp_path / "open"
        open_gate.touch()
        acknowledged = [f"held-{n}" for n in range(HELD)]
        for execution_id in acknowledged:
            assert start(server, execution_id, held).status_code == 201
        filler = fill(small_disk, LEFT_FREE)
        refusals = []
        for n in range(3000):
            answer = start(server, f"e{n}", open_gate)
            if answer.status_code == 201:
                acknowledged.append(f"e{n}")
                continue
            assert answer.status_code == 503, answer.text
            assert answer.json()["error"]["code"] == "STORAGE_ERROR", answer.text
            refusals.append(answer.json()["error"]["message"])
            if len(refusals) == 5:
                break
        assert len(refusals) == 5
        assert "the disk is full" in refusals[0]
        held.touch()  # the held tasks finish: their results meet the full disk
        worker_log = tmp_path / "worker-w.log"
        wait_until(lambda: "STORAGE_ERROR" in worker_log.read_text(), 60,
                   what="a result the full disk refused")  # fmt: skip
        full_db = server.db.stat().st_size
        filler.unlink()  # space freed: the same process serves again
        for n in range(5):
            assert start(server, f"after-{n}", open_gate).status_code == 201
            acknowledged.append(f"after-{n}")
        with server.client() as client:
            for execution_id in acknowledged:
                assert client.wait(execution_id, timeout=120).status == "completed", execution_id
                assert client.describe(execution_id).output == {"size": len(PAD)}
                assert succeeded_per_step(client, execution_id) == {"g": 1, "a": 1}
        # the WAL was checkpointed into the database (without it, not before it held 4 MiB)
        assert server.db.stat().st_size > full_db
        assert server.process is not None and server.process.poll() is None  # never restarted
    finally:
        server.stop()
