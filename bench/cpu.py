"""CPU per execution of the actor runtime itself: the 3-step workflow of bench/runtime.py on the
memory store (no disk, so no fsync in the way), with 100 executions in flight and a fake worker
of the given concurrency.

    python bench/cpu.py [--concurrency N] [--executions N]
    python bench/cpu.py --instructions [--executions N]

Ends with one JSON line. Seconds on a shared machine swing; instruction counts do not:
``--instructions`` runs this script twice under ``valgrind --tool=callgrind`` (with 100 and with
100 + N executions after the same warm-up, N 300 by default) and prints the difference of the
"Collected" totals divided by N: instructions per execution, the figure issue 23 judges by.
"""

from __future__ import annotations

import argparse
import json
import time

import trio
from callgrind import per_execution
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
            result = await runtime.wait(execution_id, 86_400)  # a day: callgrind runs slowly
            assert result.status == "completed"

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


def instructions(concurrency: int, executions: int) -> None:
    """Print the instructions per execution, as the difference of two runs."""
    per = per_execution(__file__, 100, executions, "--concurrency", str(concurrency))
    print(f"{per / 1e6:.3f} M instructions per execution (callgrind, {executions} executions)")
    print(json.dumps({"instructions_per_exec": round(per), "concurrency": concurrency}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--concurrency", type=int, default=10_000)
    parser.add_argument("--executions", type=int, default=None)
    parser.add_argument("--instructions", action="store_true", help="count under callgrind")
    args = parser.parse_args()
    if args.instructions:
        instructions(args.concurrency, args.executions or 300)
    else:
        trio.run(main, args.concurrency, args.executions or 5000)
