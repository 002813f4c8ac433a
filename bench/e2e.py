"""End-to-end benchmark: a real server (SQLite, synchronous FULL) and a real worker process over
WebSocket; executions started and awaited through the HTTP API.

    python bench/e2e.py [--executions 2000] [--in-flight 200] [--idle 200]
    python bench/e2e.py --burst 500 [--idle 200]
    python bench/e2e.py --server hypercorn   (the same, on the alternative server)
    python bench/e2e.py --log-level info     (the server's own default; benches run at warning)
    python bench/e2e.py --burst 5000 --worker-concurrency 6000   (the worker's credit: 2,000)

Prints executions/s and start-to-complete latency (p50/p99) for ``--executions`` executions of
a 3-step no-op workflow with ``--in-flight`` at once, the server's CPU per execution, and the
latency of one execution at a time on an idle server (p50/p99 over ``--idle``), driven by a lean
hand-written keep-alive client. Bounded in time (every wait has a timeout). Ends with one JSON
line.

``--burst N [--client aiohttp|httpx] [--compare] [--skip-5000]`` measures the way an ordinary
client loads Orbit instead (bench/burst.py): N executions submitted at once, each one
``POST /v1/executions?wait=60`` whose answer carries the output, checked; then one execution at
a time with the same client (the first few of them are printed too: they wait while the server
closes the burst's connections); then whether a burst of 5,000 completes. Ends with the JSON line
``{burst_one_request_exec_per_s, burst_server_cpu_ms_per_exec, burst_worker_cpu_ms_per_exec,
burst_idle_p50_ms, burst_idle_p99_ms, burst_5000_completed}``.

A burst larger than the worker's concurrency (``--worker-concurrency``, 2,000 by default) costs
more per execution: each task beyond the worker's credit waits in the dispatcher's queue, and its
dispatch, when a slot frees, is an offer to its execution's actor and a commit of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import trio
from burst import run_burst  # bench/burst.py (a script's folder is on sys.path)

ROOT = Path(__file__).resolve().parent.parent
THREE = """
workflow: noop3
version: 1.0.0
tasks: {noop: {version: "1"}}
steps:
  - {id: a, task: noop, input: {n: "${input.n}"}}
  - {id: b, task: noop, input: {n: "${steps.a.output.n}"}}
  - {id: c, task: noop, input: {n: "${steps.b.output.n}"}}
output: {n: "${steps.c.output.n}"}
"""


def start_server(
    folder: Path, server: str = "orbit", retention: str = "30d", log_level: str = "warning"
) -> tuple[subprocess.Popen[str], str]:
    """``orbit server`` on a free port; returns the process and its URL once ready."""
    command = [sys.executable, "-m", "orbit_actors.cli", "server", "--db", str(folder / "bench.db"),
               "--bind", "127.0.0.1:0", "--log-level", log_level, "--retention", retention]  # fmt: skip
    if server != "orbit":
        command += ["--server", server]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"ready on (http://\S+)", process.stdout.readline())
        if found:
            return process, found.group(1)
    raise SystemExit("the server did not start")


Processes = tuple["subprocess.Popen[str]", "subprocess.Popen[bytes]", str]


@contextmanager
def server_and_worker(
    server_kind: str = "orbit", log_level: str = "warning", concurrency: int = 2000
) -> Iterator[Processes]:
    """A server (``orbit`` or ``hypercorn``) on a fresh SQLite file with the no-op workflow
    deployed, and a registered, warmed-up no-op worker of ``concurrency``; yields both
    processes and the URL, and stops them on the way out."""
    with tempfile.TemporaryDirectory() as folder:
        server, url = start_server(Path(folder), server_kind, log_level=log_level)
        worker = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "noop_worker.py")],
            env={**os.environ, "ORBIT_URL": url, "ORBIT_BENCH_CONCURRENCY": str(concurrency)},
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            httpx.post(
                f"{url}/v1/definitions", content=THREE, headers={"content-type": "application/yaml"}
            ).raise_for_status()
            trio.run(load, url, 100, 50)  # warm up (and wait for the worker to register)
            yield server, worker, url
        finally:
            worker.terminate()
            server.terminate()
            worker.wait(30)
            server.wait(30)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Http:
    """A minimal HTTP/1.1 keep-alive connection: the load generator must cost far less CPU than
    the server it measures (httpx's pool costs more per request than Orbit does)."""

    def __init__(self, stream: trio.SocketStream, host: str) -> None:
        self.stream, self.host, self.buffer = stream, host, b""

    @classmethod
    async def open(cls, url: str) -> Http:
        host, port = url.split("//", 1)[1].rsplit(":", 1)
        return cls(await trio.open_tcp_stream(host, int(port)), f"{host}:{port}")

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else b""
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n\r\n").encode()  # fmt: skip
        await self.stream.send_all(head + data)
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += await self.stream.receive_some(65536)
        header, _, rest = self.buffer.partition(b"\r\n\r\n")
        lines = header.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = next(
            int(v)
            for k, _, v in (line.partition(":") for line in lines[1:])
            if k.lower() == "content-length"
        )
        while len(rest) < length:
            rest += await self.stream.receive_some(65536)
        self.buffer = rest[length:]
        return status, json.loads(rest[:length])


async def one(http: Http, n: int, latencies: list[float]) -> None:
    began = time.perf_counter()
    _, started = await http.request(
        "POST", "/v1/executions", {"workflow": "noop3", "input": {"n": n}}
    )
    _, summary = await http.request(
        "GET", f"/v1/executions/{started['execution_id']}/wait?timeout=60"
    )
    assert summary["status"] == "completed", summary
    latencies.append(time.perf_counter() - began)


async def load(
    url: str | list[str], total: int, in_flight: int, each: Any = None
) -> tuple[float, list[float]]:
    """Executions/s and latencies of ``total`` executions, ``in_flight`` at once on keep-alive
    connections (spread over the servers when ``url`` is a list); ``each(http, n, latencies)``
    runs one execution (:func:`one` unless given)."""
    urls = [url] if isinstance(url, str) else url
    run = each or one
    latencies: list[float] = []
    connections = [await Http.open(urls[n % len(urls)]) for n in range(min(in_flight, total))]
    counter = iter(range(total))

    async def client(http: Http) -> None:
        for n in counter:
            await run(http, n, latencies)

    began = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for http in connections:
            nursery.start_soon(client, http)
    rate = total / (time.perf_counter() - began)
    for http in connections:
        await http.stream.aclose()
    return rate, latencies


async def idle(url: str, count: int) -> list[float]:
    latencies: list[float] = []
    http = await Http.open(url)
    for n in range(count):
        await one(http, n, latencies)
    await http.stream.aclose()
    return latencies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _descriptors_for_bursts() -> None:
    """One connection per request in flight: as many open files as the hard limit allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--executions", type=int, default=2000)
    parser.add_argument("--in-flight", type=int, default=200)
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--burst", type=int, default=0, help="N executions at once (burst.py)")
    parser.add_argument("--client", choices=["aiohttp", "httpx"], default="aiohttp",
                        help="the --burst client")  # fmt: skip
    parser.add_argument("--compare", action="store_true",
                        help="--burst: also start + wait, and GET /healthz")  # fmt: skip
    parser.add_argument("--skip-5000", action="store_true",
                        help="--burst: do not check that a burst of 5,000 completes")  # fmt: skip
    parser.add_argument("--server", choices=["orbit", "hypercorn"], default="orbit")
    parser.add_argument("--log-level", choices=["warning", "info", "debug"], default="warning",
                        help="the server's (its own default is info)")  # fmt: skip
    parser.add_argument("--worker-concurrency", type=int, default=2000,
                        help="the worker's; a burst above it queues tasks in the dispatcher")  # fmt: skip
    args = parser.parse_args()
    with server_and_worker(args.server, args.log_level, args.worker_concurrency) as (
        server, worker, url,
    ):  # fmt: skip
        if args.burst:
            _descriptors_for_bursts()
            run_burst(url, (server.pid, worker.pid), args.burst, args.idle, args.client,
                      check_5000=not args.skip_5000, compare=args.compare,
                      cpu_seconds=cpu_seconds)  # fmt: skip
            return
        cpu_before = cpu_seconds(server.pid)
        worker_before, client_before = cpu_seconds(worker.pid), time.process_time()
        rate, latencies = trio.run(load, url, args.executions, args.in_flight)
        cpu_ms = (cpu_seconds(server.pid) - cpu_before) * 1000 / args.executions
        worker_ms = (cpu_seconds(worker.pid) - worker_before) * 1000 / args.executions
        client_ms = (time.process_time() - client_before) * 1000 / args.executions
        quiet = trio.run(idle, url, args.idle)
    p50, p99 = percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000
    idle_p50, idle_p99 = percentile(quiet, 0.5) * 1000, percentile(quiet, 0.99) * 1000
    print(
        f"{args.executions} executions, {args.in_flight} in flight: {rate:,.0f} executions/s  p50 {p50:.1f} ms  p99 {p99:.1f} ms"
    )
    print(
        f"CPU per execution: server {cpu_ms:.2f} ms, worker {worker_ms:.2f} ms, this client {client_ms:.2f} ms (2 cores shared)"
    )
    print(
        f"one at a time on an idle server ({args.idle}): p50 {idle_p50:.1f} ms  p99 {idle_p99:.1f} ms"
    )
    print(json.dumps({
        "exec_per_s": round(rate), "p50_ms": round(p50, 2), "p99_ms": round(p99, 2),
        "server_cpu_ms_per_exec": round(cpu_ms, 3),
        "worker_cpu_ms_per_exec": round(worker_ms, 3), "client_cpu_ms_per_exec": round(client_ms, 3),
        "idle_p50_ms": round(idle_p50, 2),
        "idle_p99_ms": round(idle_p99, 2), "median_ms": round(statistics.median(latencies) * 1000, 2),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
