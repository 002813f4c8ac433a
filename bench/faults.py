"""Faults beyond SIGKILL (docs/faults.md), each run once against real server and worker
processes on a SQLite file, with one JSON line of counts per fault:

    python bench/faults.py [--only crash:commit-before-answer,power:full,...] [--cuts 6]

``started`` start requests sent, ``acknowledged`` answered 201, ``completed`` of those that
completed after the fault, ``lost`` acknowledged but missing or not completed within the wait,
``resolved_twice`` executions with a step that succeeded more than once. The faults: a crash at
each named point (``crash:<point>``), power cuts with ``synchronous=full`` and one with
``normal`` (``power:full``, ``power:normal``; needs a C compiler), a full 2 MiB disk
(``disk:full``; needs root to mount a tmpfs). A fault that cannot run here prints a line with
``skipped`` and the reason. The numbers are counts, not speeds: a run is correct when ``lost``
and ``resolved_twice`` are 0 (``power:normal`` is expected to lose some).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from orbit_actors.client import ApiError  # noqa: E402
from tests.e2e.harness import ServerProcess, WorkerProcess  # noqa: E402
from tests.e2e.test_crash_points import NAPS  # noqa: E402
from tests.e2e.test_power_loss import SHIM, Load, power_cut  # noqa: E402

POINTS = ["commit-before-answer", "answer-before-dispatch", "group-commit", "result-before-ack"]


def counts(server: ServerProcess, started: int, acknowledged: list[str]) -> dict[str, int]:
    """Wait for every acknowledged execution (60 s each at most) and count."""
    completed = twice = 0
    with server.client() as client:
        for execution_id in acknowledged:
            try:
                if client.wait(execution_id, timeout=60).status != "completed":
                    continue
            except ApiError:
                continue  # NOT_FOUND (lost) or WAIT_TIMEOUT
            completed += 1
            events = client.history(execution_id).events
            steps = Counter(e["step"] for e in events if e["type"] == "StepSucceeded")
            twice += any(n > 1 for n in steps.values())
    return {"started": started, "acknowledged": len(acknowledged), "completed": completed,
            "lost": len(acknowledged) - completed, "resolved_twice": twice}  # fmt: skip


def start_many(server: ServerProcess, prefix: str, count: int) -> list[str]:
    def start(n: int) -> str | None:
        body = {"workflow": "naps", "input": {"n": f"{prefix}{n}"}, "execution_id": f"{prefix}{n}"}
        try:
            answer = httpx.post(f"{server.url}/v1/executions", json=body, timeout=30)
        except httpx.TransportError:
            return None
        return f"{prefix}{n}" if answer.status_code == 201 else None

    with ThreadPoolExecutor(8) as pool:
        return [i for i in pool.map(start, range(count)) if i is not None]


def crash(folder: Path, point: str) -> dict[str, Any]:
    server = ServerProcess(folder, "--session-timeout", "5s")
    server.env = {"ORBIT_CRASH_AT": f"{point}:30"}
    server.start()
    server.client().deploy(NAPS)
    worker = WorkerProcess(server, "w", env={"E2E_CONCURRENCY": "4"})
    try:
        acknowledged = start_many(server, "e", 120)
        assert server.process is not None
        if server.process.wait(timeout=120) != 70:
            return {"error": "the server did not stop at the crash point"}
        server.env = {}
        server.start()
        return counts(server, 120, acknowledged)
    finally:
        worker.stop()
        server.stop()


def power(folder: Path, synchronous: str, cuts: int) -> dict[str, Any]:
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        return {"skipped": "no C compiler to build the power-cut shim"}
    shim = folder / "powercut.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(shim), str(SHIM), "-ldl"],
                   check=True)  # fmt: skip
    server = ServerProcess(folder, "--synchronous", synchronous, "--session-timeout", "5s")
    server.env = {"LD_PRELOAD": str(shim), "ORBIT_POWERCUT_PREFIX": str(server.db.resolve())}
    server.start()
    server.client().deploy(NAPS)
    worker = WorkerProcess(server, "w", env={"E2E_CONCURRENCY": "8"})
    acknowledged: list[str] = []
    started = 0
    try:
        for cut in range(cuts):
            with Load(server, f"c{cut}") as load:
                time.sleep(random.uniform(0.3, 1.5))
                power_cut(server)
            acknowledged += load.acknowledged
            started += load.sent
            server.start()
        return {**counts(server, started, acknowledged), "cuts": cuts}
    finally:
        worker.stop()
        server.stop()


def full_disk(folder: Path) -> dict[str, Any]:
    if os.geteuid() != 0:
        return {"skipped": "mounting a 2 MiB tmpfs needs root"}
    disk = folder / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], check=True)
    server = ServerProcess(folder)
    server.db = disk / "orbit.db"
    try:
        server.start()
        server.client().deploy(NAPS)
        worker = WorkerProcess(server, "w", env={"E2E_CONCURRENCY": "16"})
        stats = os.statvfs(disk)
        filler = disk / "filler"
        filler.write_bytes(b"\0" * (stats.f_bavail * stats.f_frsize - 300 * 1024))
        acknowledged, refused, started = [], 0, 0
        while refused < 5 and started < 5000:
            started += 1
            acknowledged += start_many(server, f"e{started}-", 1)
            refused = started - len(acknowledged)
        time.sleep(2)  # results meet the full disk meanwhile
        filler.unlink()
        return {**counts(server, started, acknowledged), "refused_while_full": refused}
    finally:
        server.stop()
        if "worker" in locals():
            worker.stop()
        subprocess.run(["umount", "-l", str(disk)], check=False)


def faults(cuts: int) -> dict[str, Callable[[Path], dict[str, Any]]]:
    table: dict[str, Callable[[Path], dict[str, Any]]] = {
        f"crash:{p}": partial(crash, point=p) for p in POINTS
    }
    table["power:full"] = partial(power, synchronous="full", cuts=cuts)
    table["power:normal"] = partial(power, synchronous="normal", cuts=1)
    table["disk:full"] = full_disk
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated faults (default: all)")
    parser.add_argument("--cuts", type=int, default=6, help="power cuts with synchronous=full")
    args = parser.parse_args()
    table = faults(args.cuts)
    chosen = [f for f in args.only.split(",") if f] or list(table)
    for name in chosen:
        with tempfile.TemporaryDirectory(prefix="orbit-fault-") as folder:
            line = {"fault": name, **table[name](Path(folder))}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()
