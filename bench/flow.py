"""Benchmark of flow control, in-process, on SQLite with synchronous FULL and a fake worker.

    python bench/flow.py [--queued 100000] [--executions 2000] [--in-flight 100]

1. **Other key's latency.** One execution of key ``hog`` holds its only slot (``limit: 1``) and
   ``--queued`` more of that key wait behind it, stored as ``queued``. An execution of another
   key then starts and completes (median of 20); the same on an idle runtime (a fresh store).
   ``other_key_latency_ratio`` = busy / idle (target ≤ 2).
2. **Overhead.** ``--executions`` 3-step executions, ``--in-flight`` at a time, of a workflow
   declaring a concurrency key (one per execution, so never full) and a task rate limit (never
   reached), against the same workflow without them, alternated in one run. Compared by CPU
   time per execution (the machine is shared: wall-clock throughput would measure the
   neighbours). ``flow_overhead_ratio`` = plain CPU per execution / flow CPU per execution
   (target ≥ 0.9; 1.0 means no overhead).

Ends with one JSON line ``{"other_key_latency_ratio", "flow_overhead_ratio", …}``.
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

KEYED = """
workflow: keyed
version: 1.0.0
input: {type: object, properties: {customer: {type: string}}}
flow: {concurrency: {key: '${input.customer}', limit: 1}}
signals: {go: null}
tasks: {t: {version: "1"}}
steps:
  - {id: hold, await: go, when: 'input.customer == "hog"'}
  - {id: a, task: t}
"""
THREE = """
workflow: {name}
version: 1.0.0
input: {{type: object, properties: {{n: {{type: integer}}, customer: {{type: string}}}}}}
{flow}
tasks: {{t: {{version: "1"{rate}}}}}
steps:
  - {{id: a, task: t, input: {{n: "${{input.n}}"}}}}
  - {{id: b, task: t, input: {{n: "${{steps.a.output.n}}"}}}}
  - {{id: c, task: t, input: {{n: "${{steps.b.output.n}}"}}}}
"""
PLAIN = THREE.format(name="plain", flow="", rate="")
FLOWED = THREE.format(
    name="flowed",
    flow="flow: {concurrency: {key: '${input.customer}', limit: 5, on_full: queue}}",
    rate=", rate_limit: {key: '${input.customer}', limit: 1000000, per: 1s}",
)
SAMPLES = 20


async def other_key_latency(runtime: Runtime, prefix: str) -> float:
    """Median seconds for an execution of key ``other`` to start and complete."""
    took = []
    for n in range(SAMPLES):
        began = time.perf_counter()
        execution_id, _ = await runtime.start(
            "keyed", input={"customer": f"other-{n}"}, execution_id=f"{prefix}{n}"
        )
        assert (await runtime.wait(execution_id, 600)).status == "completed"
        took.append(time.perf_counter() - began)
    return statistics.median(took)


async def with_runtime(folder: Path, name: str, queued: int) -> float:
    """The other key's latency with ``queued`` executions of key ``hog`` waiting."""
    async with (
        open_sqlite_store(folder / f"{name}.db") as store,
        open_runtime(store, RuntimeConfig()) as runtime,
        trio.open_nursery() as nursery,
    ):
        await nursery.start(FakeWorker(runtime).serve)
        await runtime.register_definition(KEYED)
        slots = trio.Semaphore(200)

        async def queue_one(n: int) -> None:
            async with slots:
                await runtime.start("keyed", input={"customer": "hog"}, execution_id=f"hog{n}")

        await runtime.start("keyed", input={"customer": "hog"}, execution_id="hog-holder")
        async with trio.open_nursery() as starting:
            for n in range(queued):
                starting.start_soon(queue_one, n)
        if queued:
            page = await runtime.list_executions(status="queued", limit=1)
            assert page.executions, "nothing was queued"
        latency = await other_key_latency(runtime, "x")
        nursery.cancel_scope.cancel()
        return latency


async def cpu_per_execution(runtime: Runtime, workflow: str, total: int, in_flight: int) -> float:
    """CPU seconds of this process per execution of ``workflow``."""
    slots = trio.Semaphore(in_flight)

    async def one(index: int) -> None:
        async with slots:
            body = {"n": index, "customer": f"c{index}"}
            execution_id, _ = await runtime.start(workflow, input=body)
            assert (await runtime.wait(execution_id, 600)).status == "completed"

    began = time.process_time()
    async with trio.open_nursery() as nursery:
        for index in range(total):
            nursery.start_soon(one, index)
    return (time.process_time() - began) / total


async def overhead(folder: Path, total: int, in_flight: int) -> tuple[float, float]:
    """CPU per execution without and with flow control, alternating rounds in one runtime."""
    async with (
        open_sqlite_store(folder / "overhead.db") as store,
        open_runtime(store, RuntimeConfig()) as runtime,
        trio.open_nursery() as nursery,
    ):
        await nursery.start(FakeWorker(runtime).serve)
        await runtime.register_definition(PLAIN)
        await runtime.register_definition(FLOWED)
        await cpu_per_execution(runtime, "plain", min(500, total), in_flight)  # warm up
        plain, flowed = [], []
        for _ in range(4):
            plain.append(await cpu_per_execution(runtime, "plain", total // 4, in_flight))
            flowed.append(await cpu_per_execution(runtime, "flowed", total // 4, in_flight))
        nursery.cancel_scope.cancel()
    return statistics.median(plain), statistics.median(flowed)


async def main(queued: int, total: int, in_flight: int) -> None:
    tune_gc()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        idle = await with_runtime(folder, "idle", 0)
        busy = await with_runtime(folder, "busy", queued)
        print(
            f"other key, idle: {idle * 1000:.1f} ms; with {queued:,} queued: {busy * 1000:.1f} ms"
        )
        plain, flowed = await overhead(folder, total, in_flight)
        print(f"CPU per execution: plain {plain * 1000:.3f} ms, flow {flowed * 1000:.3f} ms")
    print(json.dumps({
        "other_key_latency_ratio": round(busy / idle, 3),
        "flow_overhead_ratio": round(plain / flowed, 3),
        "queued": queued,
        "other_key_idle_ms": round(idle * 1000, 2),
        "other_key_busy_ms": round(busy * 1000, 2),
        "cpu_ms_per_execution_plain": round(plain * 1000, 3),
        "cpu_ms_per_execution_flow": round(flowed * 1000, 3),
    }))  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queued", type=int, default=100_000)
    parser.add_argument("--executions", type=int, default=2000)
    parser.add_argument("--in-flight", type=int, default=100)
    args = parser.parse_args()
    trio.run(main, args.queued, args.executions, args.in_flight)
