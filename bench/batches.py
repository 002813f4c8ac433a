"""Batch benchmark: the CPU a batch spends per execution it acts on, in-process on a SQLite file
(synchronous FULL) under a runtime, so only the server's own work is counted (the CPU time
includes the store's writer and reader threads).

    python bench/batches.py [--n 10000] [--action terminate|pause] [--rate 100000]

``--n`` executions of a workflow waiting on a signal are started and left to passivate (the
runtime is reopened, so every one is dormant, as after a restart); then one batch acts on all
of them at ``--rate`` (high: the pacer is not what is measured). It prints the CPU seconds and
wall seconds of the batch and the CPU milliseconds per execution (``cpu_ms_per_execution``).

Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from pathlib import Path

import trio

from orbit_actors.runtime import RuntimeConfig, open_runtime
from orbit_actors.store import open_sqlite_store
from orbit_actors.store.batches import BatchFilter, BatchRecord

GATE = """
workflow: gate
version: 1.0.0
signals: {go: {}}
steps:
  - {id: wait, await: go}
"""


async def prepare(db: Path, n: int) -> None:
    """``n`` executions waiting on their signal."""
    async with open_sqlite_store(db) as store, open_runtime(store) as runtime:
        await runtime.register_definition(GATE)
        limit = trio.CapacityLimiter(200)

        async def start(i: int) -> None:
            async with limit:
                await runtime.start("gate", execution_id=f"b{i}")

        async with trio.open_nursery() as nursery:
            for i in range(n):
                nursery.start_soon(start, i)


async def measure(db: Path, action: str, rate: float) -> dict[str, float]:
    """One batch over every execution: its CPU and wall seconds."""
    config = RuntimeConfig(batch_rate=rate)
    async with open_sqlite_store(db) as store, open_runtime(store, config) as runtime:
        cpu, wall = time.process_time(), time.perf_counter()
        record = await runtime.batches.create(action, BatchFilter(workflow="gate"))
        assert isinstance(record, BatchRecord)
        status = await runtime.batches.wait(record.batch_id)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert status.record.done == status.record.matched, status
    return {"executions": status.record.done, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
            "cpu_ms_per_execution": round(cpu * 1000 / status.record.done, 3)}  # fmt: skip


def main() -> None:
    """Run the benchmark and print its JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--action", choices=["terminate", "pause"], default="terminate")
    parser.add_argument("--rate", type=float, default=100_000)
    args = parser.parse_args()
    logging.getLogger("orbit").setLevel(logging.ERROR)  # one line per execution otherwise
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "orbit.db"
        trio.run(prepare, db, args.n)
        result = trio.run(measure, db, args.action, args.rate)
    print(json.dumps({"bench": "batches", "action": args.action, **result}))


if __name__ == "__main__":
    main()
