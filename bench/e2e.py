"""End-to-end benchmark: a real server (SQLite, synchronous FULL) and a real worker process over
WebSocket; executions started and awaited through the HTTP API.

    python bench/e2e.py [--executions 2000] [--in-flight 200] [--idle 200]
    python bench/e2e.py --burst 500 [--idle 200]
    python bench/e2e.py --server hypercorn   (the same, on the alternative server)

Prints executions/s and start-to-complete latency (p50/p99) for ``--executions`` executions of
a 3-step no-op workflow with ``--in-flight`` at once, the server's CPU per execution, and the
latency of one execution at a time on an idle server (p50/p99 over ``--idle``), driven by a lean
hand-written keep-alive client. Bounded in time (every wait has a timeout). Ends with one JSON
line.

``--burst N`` measures the way an ordinary client loads Orbit instead: httpx's ``AsyncClient``,
N executions submitted at once (one connection per request in flight), each one
``POST /v1/executions?wait=60`` whose answer carries the output, checked; then the same burst as
start + ``GET …/wait`` (two requests); then one execution at a time with the same client. Ends
with the JSON line ``{burst_one_request_exec_per_s, burst_start_wait_exec_per_s,
burst_server_cpu_ms_per_exec, burst_idle_p50_ms}`` and, beside them, the same burst of
``GET /healthz`` (``burst_healthz_req_per_s``, ``burst_client_cpu_ms_per_req``): the ceiling the
client and the transport alone set on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import trio

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
    folder: Path, server: str = "orbit", retention: str = "30d"
) -> tuple[subprocess.Popen[str], str]:
    """``orbit server`` on a free port; returns the process and its URL once ready."""
    command = [sys.executable, "-m", "orbit_actors.cli", "server", "--db", str(folder / "bench.db"),
               "--bind", "127.0.0.1:0", "--log-level", "warning", "--retention", retention]  # fmt: skip
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


async def one_request(client: httpx.AsyncClient, n: int) -> None:
    """Start an execution and get its output in one request."""
    answer = await client.post(
        "/v1/executions", params={"wait": 60}, json={"workflow": "noop3", "input": {"n": n}}
    )
    body = answer.json()
    assert body["status"] == "completed" and body["output"] == {"n": n}, body


async def start_then_wait(client: httpx.AsyncClient, n: int) -> None:
    """Start an execution, then wait for its output: two requests."""
    started = await client.post("/v1/executions", json={"workflow": "noop3", "input": {"n": n}})
    execution_id = started.json()["execution_id"]
    done = await client.get(f"/v1/executions/{execution_id}/wait", params={"timeout": 60})
    body = done.json()
    assert body["status"] == "completed" and body["output"] == {"n": n}, body


async def healthz(client: httpx.AsyncClient, n: int) -> None:
    """The transport alone: what the same client pays for a request the server does nothing
    for (the ceiling of the burst on this machine)."""
    answer = await client.get("/healthz")
    assert answer.status_code == 200, answer.text


async def burst(url: str, total: int, path: Any) -> float:
    """Executions/s with ``total`` clients arriving at once, each an httpx ``AsyncClient`` of its
    own (one connection per request in flight; one shared pool of ``total`` connections would
    measure httpcore's pool, whose cost per request grows with its size)."""
    context = ssl.create_default_context()  # made once: httpx would load the CAs per client

    async def client(n: int) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=120, verify=context) as http:
            await path(http, n)

    began = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for n in range(total):
            nursery.start_soon(client, n)
    return total / (time.perf_counter() - began)


async def burst_idle(url: str, count: int) -> list[float]:
    """Latencies of one execution at a time (one request each) with httpx's AsyncClient."""
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        for n in range(count):
            began = time.perf_counter()
            await one_request(client, n)
            latencies.append(time.perf_counter() - began)
    return latencies


def run_burst(url: str, server_pid: int, worker_pid: int, total: int, idle_count: int) -> None:
    """The ``--burst`` measurements (see the module docstring)."""
    trio.run(burst, url, min(total, 100), one_request)  # warm up
    cpu_before, worker_before = cpu_seconds(server_pid), cpu_seconds(worker_pid)
    client_before = time.process_time()
    one_rate = trio.run(burst, url, total, one_request)
    cpu_ms = (cpu_seconds(server_pid) - cpu_before) * 1000 / total
    worker_ms = (cpu_seconds(worker_pid) - worker_before) * 1000 / total
    client_ms = (time.process_time() - client_before) * 1000 / total
    two_rate = trio.run(burst, url, total, start_then_wait)
    healthz_before = time.process_time()
    ceiling = trio.run(burst, url, total, healthz)
    healthz_client_ms = (time.process_time() - healthz_before) * 1000 / total
    quiet = trio.run(burst_idle, url, idle_count)
    idle_p50 = percentile(quiet, 0.5) * 1000
    print(f"burst of {total}, one request each: {one_rate:,.0f} executions/s, CPU per execution: "
          f"server {cpu_ms:.2f} ms, worker {worker_ms:.2f} ms, this client {client_ms:.2f} ms")  # fmt: skip
    print(f"burst of {total}, start + wait: {two_rate:,.0f} executions/s")
    print(f"burst of {total} GET /healthz (the client and transport alone): {ceiling:,.0f} "
          f"requests/s, this client's CPU {healthz_client_ms:.2f} ms per request")  # fmt: skip
    print(f"one at a time, one request each ({idle_count}): p50 {idle_p50:.1f} ms")
    print(json.dumps({
        "burst_one_request_exec_per_s": round(one_rate),
        "burst_start_wait_exec_per_s": round(two_rate),
        "burst_server_cpu_ms_per_exec": round(cpu_ms, 3), "burst_idle_p50_ms": round(idle_p50, 2),
        "burst_healthz_req_per_s": round(ceiling), "burst_client_cpu_ms_per_req": round(healthz_client_ms, 3),
    }))  # fmt: skip


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--executions", type=int, default=2000)
    parser.add_argument("--in-flight", type=int, default=200)
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--burst", type=int, default=0, help="N executions at once, httpx")
    parser.add_argument("--server", choices=["orbit", "hypercorn"], default="orbit")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        server, url = start_server(Path(folder), args.server)
        worker = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "noop_worker.py")],
            env={**os.environ, "ORBIT_URL": url}, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            httpx.post(
                f"{url}/v1/definitions", content=THREE, headers={"content-type": "application/yaml"}
            ).raise_for_status()
            trio.run(load, url, 100, 50)  # warm up (and wait for the worker to register)
            if args.burst:
                run_burst(url, server.pid, worker.pid, args.burst, args.idle)
                return
            cpu_before = cpu_seconds(server.pid)
            worker_before, client_before = cpu_seconds(worker.pid), time.process_time()
            rate, latencies = trio.run(load, url, args.executions, args.in_flight)
            cpu_ms = (cpu_seconds(server.pid) - cpu_before) * 1000 / args.executions
            worker_ms = (cpu_seconds(worker.pid) - worker_before) * 1000 / args.executions
            client_ms = (time.process_time() - client_before) * 1000 / args.executions
            quiet = trio.run(idle, url, args.idle)
        finally:
            worker.terminate()
            server.terminate()
            worker.wait(30)
            server.wait(30)
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
