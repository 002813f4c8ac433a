"""CPU per execution of the actor runtime itself: the 3-step workflow of bench/runtime.py on the
memory store (no disk, so no fsync in the way), with 100 executions in flight and a fake worker
of the given concurrency.

    python bench/cpu.py [--concurrency N] [--executions N]

Ends with one JSON line. Seconds on a shared machine swing; instruction counts do not: run it
twice under ``valgrind --tool=callgrind --callgrind-out-file=/dev/null`` with two execution
counts and divide the difference of the "Collected" totals by the difference of the counts.
"""

from __future__ import annotations

import argparse
import json
import time

import trio
from runtime import THREE  # bench/runtime.py's workflow (a script's folder is on sys.path)

from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime, tune_gc
from orbit_actors.testing import FakeWorker, MemoryStore


async def run(runtime: Runtime, prefix: str, total: int) -> float:
    """Process CPU seconds for ``total`` executions, 100 in flight."""
    slots = trio.Semaphore(100)

    async def one(index: int) -> None:
        async with slots:
            execution_id, _ = await runtime.start(
                "three", input={"n": index}, execution_id=f"{prefix}{index}"
            )
            assert (await runtime.wait(execution_id, 600)).status == "completed"

    began = time.process_time()
    async with trio.open_nursery() as nursery:
        for index in range(total):
            nursery.start_soon(one, index)
    return time.process_time() - began


async def main(concurrency: int, executions: int) -> None:
    async with open_runtime(MemoryStore(), RuntimeConfig(mailbox_capacity=64)) as runtime:
        await runtime.register_definition(THREE)
        tune_gc()
        worker = FakeWorker(runtime, "bench", [("t", "1")], concurrency=concurrency)
        async with trio.open_nursery() as nursery:
            await nursery.start(worker.serve)
            await run(runtime, "warm", 200)
            seconds = await run(runtime, "x", executions)
            nursery.cancel_scope.cancel()
    per = seconds / executions * 1e6
    print(f"{per:,.0f} us of CPU per execution (worker concurrency {concurrency})")
    print(json.dumps({"cpu_us_per_exec": round(per, 1), "concurrency": concurrency}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--concurrency", type=int, default=10_000)
    parser.add_argument("--executions", type=int, default=5000)
    args = parser.parse_args()
    trio.run(main, args.concurrency, args.executions)
