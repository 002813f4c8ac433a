"""Benchmark of the actor runtime, in-process, on SQLite with synchronous FULL.

    python bench/runtime.py [--quick]

A 3-step workflow, a fake worker answering every task at once: executions per second and
start-to-complete latency (p50/p99) with 100 and with 10,000 executions in flight (after 500
executions to warm up, as bench/e2e.py does); then the same workflow served by a worker of
concurrency 1 (one task at a time: each step's result frees the slot the next step takes); then
the resident memory per execution waiting on a signal, with 100,000 waiting. Ends with one JSON
line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import trio

from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime, tune_gc
from orbit_actors.store import open_sqlite_store
from orbit_actors.testing import FakeWorker

THREE = """
workflow: three
version: 1.0.0
tasks: {t: {version: "1"}}
steps:
  - {id: a, task: t, input: {n: "${input.n}"}}
  - {id: b, task: t, input: {n: "${steps.a.output.n}"}}
  - {id: c, task: t, input: {n: "${steps.b.output.n}"}}
output: {n: "${steps.c.output.n}"}
"""
WAITING = """
workflow: waiting
version: 1.0.0
signals: {go: null}
steps: [{id: wait, await: go}]
"""


async def rate(
    runtime: Runtime, in_flight: int, total: int, prefix: str
) -> tuple[float, list[float]]:
    """Executions/s and latencies with ``in_flight`` executions kept running."""
    latencies: list[float] = []
    slots = trio.Semaphore(in_flight)

    async def one(index: int) -> None:
        async with slots:
            started = time.perf_counter()
            execution_id, _ = await runtime.start(
                "three", input={"n": index}, execution_id=f"{prefix}{index}"
            )
            row = await runtime.wait(execution_id, 600)
            assert row.status == "completed", row
            latencies.append(time.perf_counter() - started)

    began = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for index in range(total):
            nursery.start_soon(one, index)
    return total / (time.perf_counter() - began), latencies


def rss_bytes() -> int:
    """The resident set size of this process."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


async def rss_per_waiting(runtime: Runtime, count: int) -> float:
    """Memory added per execution waiting on a signal, with ``count`` waiting."""
    await runtime.register_definition(WAITING)
    before = rss_bytes()
    starters = trio.Semaphore(200)

    async def start(index: int) -> None:
        async with starters:
            await runtime.start("waiting", execution_id=f"w{index}")

    async with trio.open_nursery() as nursery:
        for index in range(count):
            nursery.start_soon(start, index)
    await trio.sleep(1)
    return (rss_bytes() - before) / count


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main(quick: bool, folder: Path) -> None:
    config = RuntimeConfig(mailbox_capacity=64)
    async with (
        open_sqlite_store(folder / "bench.db") as store,
        open_runtime(store, config) as runtime,
    ):
        await runtime.register_definition(THREE)
        tune_gc()  # as the server does
        worker = FakeWorker(runtime, "bench", [("t", "1")], concurrency=10_000)
        async with trio.open_nursery() as nursery:
            await nursery.start(worker.serve)
            await rate(runtime, 100, 500, "warm")  # as bench/e2e.py: caches, pages, allocator
            rate_100, lat_100 = await rate(runtime, 100, 1000 if quick else 5000, "a")
            rate_10k, lat_10k = await rate(runtime, 10_000, 2000 if quick else 20_000, "b")
            nursery.cancel_scope.cancel()
        worker.connection.closed()  # its session takes no more tasks
        single = FakeWorker(runtime, "bench-1", [("t", "1")], concurrency=1)
        async with trio.open_nursery() as nursery:
            await nursery.start(single.serve)
            rate_1, lat_1 = await rate(runtime, 10, 300 if quick else 1500, "c")
            waiting = 10_000 if quick else 100_000
            per_waiting = await rss_per_waiting(runtime, waiting)
            nursery.cancel_scope.cancel()
    print(
        f"100 in flight:    {rate_100:8,.0f} executions/s  p50 {percentile(lat_100, 0.5) * 1000:6.1f} ms  p99 {percentile(lat_100, 0.99) * 1000:6.1f} ms"
    )
    print(
        f"10,000 in flight: {rate_10k:8,.0f} executions/s  p50 {percentile(lat_10k, 0.5) * 1000:6.1f} ms  p99 {percentile(lat_10k, 0.99) * 1000:6.1f} ms"
    )
    print(f"ratio 10,000 vs 100: {rate_10k / rate_100:.2f}")
    print(
        f"concurrency-1 worker: {rate_1:8,.0f} executions/s  p50 {percentile(lat_1, 0.5) * 1000:6.1f} ms"
    )
    print(f"RSS per execution waiting on a signal ({waiting:,} waiting): {per_waiting:,.0f} bytes")
    print(json.dumps({
        "exec_per_s_100": round(rate_100), "exec_per_s_10000": round(rate_10k),
        "ratio_10000_vs_100": round(rate_10k / rate_100, 3),
        "exec_per_s_concurrency1": round(rate_1),
        "p50_ms_100": round(statistics.median(lat_100) * 1000, 2),
        "rss_bytes_per_waiting": round(per_waiting),
    }))  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller runs (a smoke test)")
    parser.add_argument("--dir", type=Path, default=None, help="where the database goes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        trio.run(main, args.quick, Path(folder))
