"""Cluster benchmark: ``bench/e2e.py``'s workload (a 3-step no-op workflow, started and awaited
over HTTP, a no-op worker over WebSocket) against 1, 2 and 3 servers sharing one PostgreSQL,
workers and clients spread over the servers; then the takeover time after a SIGKILL.

    python bench/cluster.py [--executions 2000] [--in-flight 200] [--lease-time 2]
                            [--database-url postgresql://…]

Without ``--database-url`` a throwaway PostgreSQL is started with its durable defaults (fsync
and synchronous_commit on). For each cluster size it prints executions/s, the servers' CPU per
execution and PostgreSQL transactions per execution (the ``xact_commit`` delta of the database
in ``pg_stat_database``, every transaction counted: commits, reads, lease renewals). The
takeover time is from the SIGKILL of a server owning waiting executions until the survivor owns
them all. Each client starts and awaits on the server it is connected to (the one that owns the
execution). Ends with one JSON line ``{pg_one_server_exec_per_s, pg_tx_per_exec, takeover_s,
lease_time_s, exec_per_s_by_servers}``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from e2e import THREE, Http, cpu_seconds, load  # noqa: E402  # bench/e2e.py (script folder)

WAITS = """
workflow: waits
version: 1.0.0
signals: {go: {type: object}}
steps: [{id: w, await: go}]
"""


def start_server(url: str, lease_s: float) -> tuple[subprocess.Popen[str], str]:
    """``orbit server --database-url`` on a free port; the process and its URL once ready."""
    command = [sys.executable, "-m", "orbit_actors.cli", "server", "--database-url", url,
               "--bind", "127.0.0.1:0", "--log-level", "warning",
               "--lease-time", f"{int(lease_s * 1000)}ms"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True)  # fmt: skip
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"ready on (http://\S+)", process.stdout.readline())
        if found:
            return process, found.group(1)
    raise SystemExit("a server did not start")


@contextmanager
def servers(url: str, count: int, lease_s: float) -> Iterator[list[tuple[subprocess.Popen[str], str]]]:  # fmt: skip
    """``count`` servers on ``url``, each with a no-op worker connected to it."""
    started = [start_server(url, lease_s) for _ in range(count)]
    workers = [
        subprocess.Popen([sys.executable, str(ROOT / "bench" / "noop_worker.py")],
                         env={**os.environ, "ORBIT_URL": address}, stderr=subprocess.DEVNULL)
        for _, address in started
    ]  # fmt: skip
    processes: list[subprocess.Popen[Any]] = [*workers, *(p for p, _ in started)]
    try:
        yield started
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            process.wait(30)


async def one(http: Http, n: int, latencies: list[float]) -> None:
    """Start an execution and wait for it on the same server (its owner)."""
    began = time.perf_counter()
    status, started = await http.request(
        "POST", "/v1/executions", {"workflow": "noop3", "input": {"n": n}}
    )
    if status != 201:
        raise SystemExit(f"a start was refused: {status} {started}")
    _, summary = await http.request(
        "GET", f"/v1/executions/{started['execution_id']}/wait?timeout=60"
    )
    if summary.get("status") != "completed":
        raise SystemExit(f"an execution did not complete: {summary}")
    latencies.append(time.perf_counter() - began)


def commits(url: str) -> int:
    """Transactions committed in the database so far (its statistics, flushed first)."""
    time.sleep(1.5)  # backends flush their counters within a second of going idle
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def measure(url: str, count: int, args: argparse.Namespace) -> dict[str, float]:
    """Executions/s, server CPU and PostgreSQL transactions per execution with ``count``
    servers."""
    with servers(url, count, args.lease_time) as started:
        urls = [address for _, address in started]
        for address in urls:
            httpx.post(f"{address}/v1/definitions", content=THREE,
                       headers={"content-type": "application/yaml"}).raise_for_status()  # fmt: skip
        trio.run(load, urls, 100 * count, 20 * count, one)  # warm up; workers register
        before_cpu = sum(cpu_seconds(p.pid) for p, _ in started)
        before_tx = commits(url)
        rate = trio.run(load, urls, args.executions, args.in_flight, one)[0]
        cpu_ms = (sum(cpu_seconds(p.pid) for p, _ in started) - before_cpu) * 1000
        tx = commits(url) - before_tx - 1  # less the read of the counter itself
    return {"exec_per_s": rate, "cpu_ms_per_exec": cpu_ms / args.executions,
            "tx_per_exec": tx / args.executions}  # fmt: skip


def takeover(url: str, lease_s: float, waiting: int = 200) -> float:
    """Seconds from the SIGKILL of a server owning ``waiting`` executions until the other
    server owns them all."""
    with servers(url, 2, lease_s) as started:
        (victim, address), _ = started
        with httpx.Client(base_url=address, timeout=30) as client:
            client.post("/v1/definitions", content=WAITS,
                        headers={"content-type": "application/yaml"}).raise_for_status()  # fmt: skip
            for n in range(waiting):
                client.post("/v1/executions", json={"workflow": "waits", "execution_id": f"t{n}"})
        with psycopg.connect(url, autocommit=True) as conn:
            victim_id = _one(conn, "SELECT server_id FROM servers WHERE address = %s", address)
            killed = time.monotonic()
            victim.kill()
            while _one(conn, "SELECT COUNT(*) FROM executions WHERE status = 'running' AND "
                             "owner = %s", victim_id):  # fmt: skip
                time.sleep(0.01)
            return time.monotonic() - killed


def _one(conn: psycopg.Connection[Any], query: str, *args: Any) -> Any:
    row = conn.execute(query.encode(), args).fetchone()
    return row[0] if row else None


def run(base: str, database: Any, args: argparse.Namespace) -> None:
    by_servers: dict[str, dict[str, float]] = {}
    for count in (1, 2, 3):
        by_servers[str(count)] = found = measure(database(f"bench_{count}"), count, args)
        print(f"{count} server(s): {found['exec_per_s']:,.0f} executions/s, server CPU "
              f"{found['cpu_ms_per_exec']:.2f} ms/execution, {found['tx_per_exec']:.2f} "
              "PostgreSQL transactions/execution", flush=True)  # fmt: skip
    took = takeover(database("bench_takeover"), args.lease_time)
    print(f"takeover after a SIGKILL: {took:.2f} s (lease time {args.lease_time:g} s)")
    print(json.dumps({
        "pg_one_server_exec_per_s": round(by_servers["1"]["exec_per_s"]),
        "pg_tx_per_exec": round(by_servers["1"]["tx_per_exec"], 2),
        "takeover_s": round(took, 2), "lease_time_s": args.lease_time,
        "exec_per_s_by_servers": {k: round(v["exec_per_s"]) for k, v in by_servers.items()},
    }))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--executions", type=int, default=2000)
    parser.add_argument("--in-flight", type=int, default=200)
    parser.add_argument("--lease-time", type=float, default=2.0, help="seconds")
    parser.add_argument("--database-url", help="a PostgreSQL server to create databases on")
    args = parser.parse_args()
    if args.database_url:
        base = args.database_url

        def database(name: str) -> str:
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name}".encode())
                conn.execute(f"CREATE DATABASE {name}".encode())
            return str(base.rsplit("/", 1)[0] + "/" + name)

        run(base, database, args)
        return
    from tests.pg import UNAVAILABLE, start_postgres

    server = start_postgres(durable=True)
    if server is None:
        raise SystemExit(f"no PostgreSQL: {UNAVAILABLE[0]}")
    try:
        run(server.url(), server.create_database, args)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
