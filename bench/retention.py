"""Retention benchmark: a steady load (start, complete, purge) through real servers on SQLite
(synchronous FULL), a no-op worker over WebSocket each.

    python bench/retention.py [--n 500000] [--in-flight 100] [--retention 2s]

Two servers run side by side on files of their own: one purging (``--retention``, short) and one
keeping everything (``--retention 0``). The purging one runs ``--n`` executions of a one-step
no-op workflow in chunks; the keeping one runs a chunk of the same size right after every fourth
one (and the last), so each pair is measured under the same load of the machine. It prints:

- ``file_growth_ratio``: the purging server's file (database and WAL) at the end over its size
  after the first tenth of the run (50,000 of 500,000), after waiting one retention and a sweep
  for the last executions to be purged too. Target: at most 1.5.
- ``throughput_ratio_purging``: the purging server's executions/s over the keeping server's in
  the chunk just after, the median over the pairs. Target: at least 0.9.
- ``purge_transaction_ms_max`` (and ``…_cpu_ms_max``): the longest time one purge
  (``PURGE_BATCH`` executions with their history) adds to the writer's transaction, measured
  in-process on a SQLite file of up to 10,000 finished executions: how long a commit batched
  with it waits for it. Target: under 50 (on a loaded machine the wall time includes waiting
  for a core; the CPU time does not).

Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from e2e import Http, cpu_seconds, load, start_server  # noqa: E402  # bench/e2e.py (script folder)

PAIR_EVERY = 4  # chunks of the purging server per chunk of the keeping one

ONE = """
workflow: noop1
version: 1.0.0
tasks: {noop: {version: "1"}}
steps: [{id: a, task: noop, input: {n: "${input.n}"}}]
output: "${steps.a.output}"
"""


async def one(http: Http, n: int, latencies: list[float]) -> None:
    """Start a one-step execution and wait for it."""
    began = time.perf_counter()
    _, started = await http.request(
        "POST", "/v1/executions", {"workflow": "noop1", "input": {"n": n}}
    )
    path = f"/v1/executions/{started['execution_id']}/wait?timeout=60"
    _, done = await http.request("GET", path)
    assert done["status"] == "completed", done
    latencies.append(time.perf_counter() - began)


@contextmanager
def served(folder: Path, retention: str) -> Iterator[tuple[str, Path, int]]:
    """A server keeping finished executions ``retention`` on ``folder``, with a no-op worker;
    its URL, database file and pid."""
    folder.mkdir()
    server, url = start_server(folder, retention=retention)
    worker = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "noop_worker.py")],
        env={**os.environ, "ORBIT_URL": url}, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        httpx.post(f"{url}/v1/definitions", content=ONE,
                   headers={"Content-Type": "application/yaml"}).raise_for_status()  # fmt: skip
        yield url, folder / "bench.db", server.pid
    finally:
        for process in (worker, server):
            process.terminate()
            process.wait(timeout=60)


def file_size(db: Path) -> int:
    """The database file and its WAL, in bytes."""
    return sum(p.stat().st_size for p in (db, db.with_name(db.name + "-wal")) if p.exists())


def purged_total(url: str) -> float:
    """The server's ``orbit_executions_purged_total``."""
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith("orbit_executions_purged_total "):
            return float(line.split()[1])
    return 0.0


async def stored(path: Path, executions: int) -> None:
    """A SQLite file holding ``executions`` finished ones, each a history of 7 events in 3
    commits (like a one-step run)."""
    from orbit_actors.history.events import Event, SignalReceived
    from orbit_actors.store import Commit, ExecutionRow, open_sqlite_store

    def row(n: int, status: str) -> ExecutionRow:
        return ExecutionRow(f"e{n}", "noop1", "1.0.0", "h" * 64, status, 1, 1000,
                            closed_at_ms=None if status == "running" else 2000)  # fmt: skip

    def events(first: int, count: int) -> list[Event]:
        return [SignalReceived(seq=first + i, timestamp_ms=1, name="s", payload={"n": "x" * 200})
                for i in range(count)]  # fmt: skip

    async def one(n: int) -> None:
        await store.commit(Commit(row(n, "running"), events(1, 3), create=True))
        await store.commit(Commit(row(n, "running"), events(4, 2)))
        await store.commit(Commit(row(n, "completed"), events(6, 2)))

    async with open_sqlite_store(path) as store:
        for first in range(0, executions, 500):
            async with trio.open_nursery() as nursery:
                for n in range(first, min(executions, first + 500)):
                    nursery.start_soon(one, n)


def longest_purge(path: Path) -> tuple[float, float]:
    """The longest time one purge (``PURGE_BATCH`` executions) adds to the writer's
    transaction, wall and CPU, in ms: the work inside the transaction, as the group writer runs
    it beside the commits of its batch (whose fsync it shares)."""
    from orbit_actors.store import dialect
    from orbit_actors.store.base import PURGE_BATCH, Retention
    from orbit_actors.store.sqlite.store import SqliteStore

    conn = sqlite3.connect(path, isolation_level=None)
    drop = SqliteStore._drop_history
    wall = cpu = 0.0
    purged = True
    while purged:
        conn.execute("BEGIN IMMEDIATE")
        began, began_cpu = time.perf_counter(), time.thread_time()
        purged = bool(dialect.purge_due(dialect.SQLITE, conn, Retention(default_ms=0), 10_000,
                                        PURGE_BATCH, lambda c, i: drop(None, c, i)))  # type: ignore[arg-type]  # fmt: skip
        wall = max(wall, (time.perf_counter() - began) * 1000)
        cpu = max(cpu, (time.thread_time() - began_cpu) * 1000)
        conn.execute("COMMIT")
    conn.close()
    return wall, cpu


def measure(args: argparse.Namespace, folder: Path) -> dict[str, float]:
    """Run the interleaved load (see the module docstring)."""
    chunk = max(1000, min(10_000, args.n // 20))
    baseline_after = max(chunk, args.n // 10)
    ratios: list[float] = []
    on_rates: list[float] = []
    baseline = 0
    with served(folder / "purging", args.retention) as (on_url, on_db, on_pid), \
            served(folder / "keeping", "0") as (off_url, _, _):  # fmt: skip
        cpu_before, done = cpu_seconds(on_pid), 0
        while done < args.n:
            count = min(chunk, args.n - done)
            rate, _ = trio.run(load, on_url, count, args.in_flight, one)
            on_rates.append(rate)
            done += count
            if len(on_rates) % PAIR_EVERY == 1 or done >= args.n:  # the same load, just after
                ratios.append(rate / trio.run(load, off_url, count, args.in_flight, one)[0])
            if not baseline and done >= baseline_after:
                baseline = file_size(on_db)
            print(f"{done:,}: {rate:,.0f}/s purging, file {file_size(on_db) / 1e6:.1f} MB, "
                  f"purged {purged_total(on_url):,.0f}", flush=True)  # fmt: skip
        cpu_ms = (cpu_seconds(on_pid) - cpu_before) * 1000 / args.n
        time.sleep(args.settle)  # the last executions' retention passes and a sweep runs
        final = file_size(on_db)
        purged = purged_total(on_url)
    ratio = statistics.median(ratios)
    return {
        "file_growth_ratio": round(final / baseline, 3),
        "throughput_ratio_purging": round(ratio, 3),
        "purging_exec_per_s": round(statistics.median(on_rates)),
        "server_cpu_ms_per_exec": round(cpu_ms, 3),
        "baseline_mb": round(baseline / 1e6, 2), "final_mb": round(final / 1e6, 2),
        "purged": purged, "n": args.n,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--n", type=int, default=500_000, help="executions through the purging server"
    )
    parser.add_argument("--in-flight", type=int, default=100)
    parser.add_argument("--retention", default="2s", help="the purging server's --retention")
    parser.add_argument("--settle", type=float, default=4.0, help="seconds to wait at the end")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        result = measure(args, folder)
        trio.run(stored, folder / "purge.db", min(args.n, 10_000))
        wall, cpu = longest_purge(folder / "purge.db")
        result["purge_transaction_ms_max"] = round(wall, 2)
        result["purge_transaction_cpu_ms_max"] = round(cpu, 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
