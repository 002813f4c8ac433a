"""``orbit dev`` in one command, and a server whose disk fills up: refusals, nothing half-written."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from orbit_actors.client import ApiError, Client

from .harness import ROOT, ServerProcess


def test_orbit_dev_serves_the_examples_with_their_worker(tmp_path: Path) -> None:
    dev = subprocess.Popen(
        [sys.executable, "-m", "orbit_actors.cli", "dev", "--bind", "127.0.0.1:0",
         "--examples", str(ROOT / "examples")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=tmp_path,
    )  # fmt: skip
    try:
        assert dev.stdout is not None
        url = ""
        deadline = time.monotonic() + 60
        while not url and time.monotonic() < deadline:
            found = re.search(r"Orbit dev server on (http://\S+)", dev.stdout.readline())
            url = found.group(1) if found else ""
        assert url, "orbit dev did not print its address"
        with Client(url) as client:
            assert {d.name for d in client.definitions()} >= {"order-saga", "approval"}
            order = {"order_id": "D-1", "amount": 5, "items": [{"sku": "a", "qty": 1}]}
            execution_id = client.start("order-saga", input=order).execution_id
            assert client.wait(execution_id, timeout=60).status == "completed"
        assert (tmp_path / ".orbit" / "orbit.db").exists()
    finally:
        dev.send_signal(signal.SIGINT)
        assert dev.wait(timeout=30) is not None


def _small_disk() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing
    resource.setrlimit(resource.RLIMIT_FSIZE, (3_000_000, 3_000_000))


def test_a_full_disk_is_storage_error_and_nothing_half_written(tmp_path: Path) -> None:
    db = tmp_path / "orbit.db"
    server = subprocess.Popen(
        [sys.executable, "-m", "orbit_actors.cli", "server", "--db", str(db), "--bind",
         "127.0.0.1:0", "--log-level", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, preexec_fn=_small_disk,
        env={**os.environ},
    )  # fmt: skip
    try:
        assert server.stdout is not None
        url = re.search(r"ready on (http://\S+)", server.stdout.readline()).group(1)  # type: ignore[union-attr]
        quick = "workflow: quick\nversion: 1.0.0\nsteps: [{id: v, value: 1}]\n"
        with Client(url) as client:
            client.deploy(quick)
            refused: ApiError | None = None
            for index in range(200):
                try:
                    client.start("quick", input={"pad": "x" * 500_000}, execution_id=f"big-{index}")
                except ApiError as exc:
                    refused = exc
                    break
            assert refused is not None and refused.status == 503 and refused.code == "STORAGE_ERROR"
            try:
                client.describe(f"big-{index}")
            except ApiError as exc:
                assert exc.code in ("NOT_FOUND", "STORAGE_ERROR")
            assert httpx.get(f"{url}/healthz").status_code == 200
        assert server.poll() is None  # still serving
    finally:
        server.kill()
        server.wait(30)
    # the file is whole: a fresh server (no size limit) opens it and keeps every acknowledged start
    restarted = ServerProcess(tmp_path).start()
    try:
        with restarted.client() as client:
            for done in range(index):
                assert client.wait(f"big-{done}", timeout=10).status == "completed"
            try:
                client.describe(f"big-{index}")
                raise AssertionError("the refused start was recorded")
            except ApiError as exc:
                assert exc.code == "NOT_FOUND"
    finally:
        restarted.stop()
