"""Benchmark of the SQLite store: commits per second (each commit = 3 events of ~300 bytes and
the execution's summary row) for 1, 10, 100 and 1,000 concurrent trio committers, with group
commit and with one transaction per commit, under synchronous FULL and NORMAL.

    python bench/store.py [--seconds S] [--repeat N] [--dir DIR]

Each configuration runs ``--repeat`` times on a new file and reports the median (the machine is
shared; the ratio is what to compare).

Ends with one JSON line: single_full, group100_full, group100_normal (commits/s) and
group_vs_single_full (the ratio measured in this run).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import trio

from orbit_actors.history.events import Event, SignalReceived
from orbit_actors.store import Commit, ExecutionRow, open_sqlite_store

PAYLOAD = {"pad": "x" * 240}
WARM_UP = 0.3


def _events(first: int) -> list[Event]:
    return [
        SignalReceived(seq=first + i, timestamp_ms=0, name="bench", payload=PAYLOAD)
        for i in range(3)
    ]


def _row(execution_id: str, last_seq: int) -> ExecutionRow:
    return ExecutionRow(
        execution_id, "bench", "1.0.0", "h" * 64, "running", 1, 0, last_seq=last_seq
    )


async def measure(
    path: Path, committers: int, seconds: float, *, group: bool, synchronous: str
) -> float:
    """Commits per second of ``committers`` concurrent committers for about ``seconds``."""
    done = 0
    async with open_sqlite_store(path, synchronous=synchronous, group_commit=group) as store:  # type: ignore[arg-type]

        async def committer(index: int) -> None:
            nonlocal done
            execution_id = f"{path.stem}-{index}"
            first = 1
            while True:
                await store.commit(Commit(_row(execution_id, first + 2), _events(first)))
                first += 3
                done += 1

        async with trio.open_nursery() as nursery:
            for index in range(committers):
                nursery.start_soon(committer, index)
            await trio.sleep(WARM_UP)  # the first commits create the executions' rows
            started, before = time.perf_counter(), done
            await trio.sleep(seconds)
            elapsed, done = time.perf_counter() - started, done - before
            nursery.cancel_scope.cancel()
    return done / elapsed


async def main(seconds: float, repeat: int, folder: Path) -> None:
    results: dict[str, float] = {}
    for synchronous in ("full", "normal"):
        for group in (False, True):
            for committers in (1, 10, 100, 1000):
                name = f"{'group' if group else 'single'}{committers}_{synchronous}"
                rates = [
                    await measure(
                        folder / f"{name}-{attempt}.db",
                        committers,
                        seconds,
                        group=group,
                        synchronous=synchronous,
                    )
                    for attempt in range(repeat)
                ]
                rate = statistics.median(rates)
                results[name] = rate
                print(
                    f"{synchronous:>6}  {'group' if group else 'single':>6}  {committers:>5} committers: {rate:10,.0f} commits/s"
                )
    single = results["single1_full"]
    summary = {
        "single_full": round(single),
        "group100_full": round(results["group100_full"]),
        "group100_normal": round(results["group100_normal"]),
        "group_vs_single_full": round(results["group100_full"] / single, 2),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--seconds", type=float, default=1.5, help="how long each configuration runs"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per configuration (median)")
    parser.add_argument(
        "--dir", type=Path, default=None, help="where the database files go (a disk, not tmpfs)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        trio.run(main, args.seconds, args.repeat, Path(folder))
