"""Executions waiting on a signal (7-day timeout) in a real server process: RSS per waiting
execution once they have left memory, no-op throughput with them waiting against none, then
SIGKILL and restart on the same file — the time to ``/readyz`` and to the first completed
signal. Ends with one JSON line.

    .venv/bin/python bench/scale.py --n 10000 [--n 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from e2e import THREE, Http, load  # noqa: E402  # bench/e2e.py (the script folder is on sys.path)

from orbit_actors.client import Client  # noqa: E402

WAITS = """
workflow: waits
version: 1.0.0
timeout: 7d
signals: {go: null}
steps: [{id: w, await: go}]
"""


def start_server(db: Path) -> tuple[subprocess.Popen[str], str, float]:
    """``orbit server`` on ``db``; the process, its URL and the seconds until it said ready."""
    began = time.perf_counter()
    command = [sys.executable, "-m", "orbit_actors.cli", "server", "--db", str(db), "--bind",
               "127.0.0.1:0", "--log-level", "warning", "--passivate-after", "1s"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if "ready on" in line:
            url = line.split("ready on ")[1].split()[0]
            return process, url, time.perf_counter() - began
    raise SystemExit("the server did not start")


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def metric(url: str, name: str) -> float:
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return -1.0


async def fill(url: str, n: int, in_flight: int = 100) -> None:
    """Start ``n`` waiting executions over ``in_flight`` connections of the lean client of
    ``bench/e2e.py`` (filling is not what is measured here)."""
    sender, receiver = trio.open_memory_channel[int](0)

    async def starter() -> None:
        http = await Http.open(url)
        async for i in receiver:
            status, body = await http.request(
                "POST", "/v1/executions", {"workflow": "waits", "execution_id": f"wait-{i}"}
            )
            assert status == 201, body
        await http.stream.aclose()

    async with trio.open_nursery() as nursery:
        for _ in range(in_flight):
            nursery.start_soon(starter)
        async with sender:
            for i in range(n):
                await sender.send(i)


def noop_rate(url: str, total: int = 2000) -> float:
    """Executions/s of 3 no-op steps each, 200 in flight (bench/e2e.py's load)."""
    rate: float = trio.run(load, url, total, 200)[0]
    return rate


def run(n: int, folder: Path) -> dict[str, float]:
    db = folder / "scale.db"
    server, url, _ = start_server(db)
    worker = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "noop_worker.py")],
        env={**os.environ, "ORBIT_URL": url}, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        with Client(url) as client:
            client.deploy(WAITS)
            client.deploy(THREE)
        trio.run(load, url, 300, 50)  # warm up, and the worker registered
        idle_rate = noop_rate(url)
        time.sleep(2)  # what the no-op load left behind leaves memory
        baseline = rss_bytes(server.pid)
        began = time.perf_counter()
        trio.run(fill, url, n)
        print(f"{n:,} started in {time.perf_counter() - began:.1f} s", flush=True)
        deadline = time.monotonic() + 600
        while metric(url, "orbit_resident_executions") > 0 and time.monotonic() < deadline:
            time.sleep(0.5)
        rss = (rss_bytes(server.pid) - baseline) / n
        print(f"RSS per waiting execution (passivated): {rss:,.0f} bytes", flush=True)
        loaded_rate = noop_rate(url)
        ratio = loaded_rate / idle_rate
        print(f"no-op executions/s: {idle_rate:,.0f} with none waiting, {loaded_rate:,.0f} with "
              f"{n:,} waiting (ratio {ratio:.2f})", flush=True)  # fmt: skip
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
        worker.kill()
    began = time.perf_counter()
    server, url, _ = start_server(db)
    try:
        ready = time.perf_counter() - began
        with Client(url) as client:
            signalled = time.perf_counter()
            client.signal("wait-7", "go")
            assert client.result("wait-7", timeout=60).status == "completed"
            first = time.perf_counter() - signalled
        print(f"restart: ready in {ready:.2f} s, first signal completed {first * 1000:.0f} ms "
              f"after ready", flush=True)  # fmt: skip
        return {
            "ready_s": ready, "first_signal_ms": first * 1000, "rss_per_waiting": rss,
            "ratio": ratio,
        }  # fmt: skip
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, action="append", help="waiting executions (repeatable)")
    args = parser.parse_args()
    sizes = args.n or [10_000]
    found: dict[str, float] = {}
    for n in sizes:
        with tempfile.TemporaryDirectory() as folder:
            figures = run(n, Path(folder))
        tag = f"{n // 1000}k" if n < 1_000_000 else f"{n // 1_000_000}m"
        found[f"ready_s_{tag}"] = round(figures["ready_s"], 2)
        found[f"first_signal_ms_{tag}"] = round(figures["first_signal_ms"], 1)
        found["rss_bytes_per_waiting"] = round(figures["rss_per_waiting"])
        found[f"throughput_ratio_{tag}_waiting"] = round(figures["ratio"], 2)
    print(json.dumps(found))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
