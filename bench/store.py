"""Benchmark of the SQLite store: commits per second (each commit = 3 events of ~300 bytes and
the execution's summary row) for 1, 10, 100 and 1,000 concurrent trio committers, with group
commit and with one transaction per commit, under synchronous FULL and NORMAL.

    python bench/store.py [--seconds S] [--repeat N] [--dir DIR]
    python bench/store.py --postgres URL|auto [--seconds S] [--repeat N]

Each configuration runs ``--repeat`` times on a new file and reports the median (the machine is
shared; the ratio is what to compare).

Ends with one JSON line: single_full, group100_full, group100_normal (commits/s) and
group_vs_single_full (the ratio measured in this run).

With ``--postgres`` the same load goes to the PostgreSQL store at URL (``auto``: a throwaway
server with PostgreSQL's default durability, fsync and synchronous_commit on, started and
removed by this script), group commit against one transaction per commit; its JSON line has
pg_single1, pg_single100, pg_group100 and pg_group_vs_single100.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import trio

from orbit_actors.history.events import Event, SignalReceived
from orbit_actors.store import Commit, ExecutionRow, Store, open_sqlite_store

ROOT = Path(__file__).resolve().parent.parent

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
    store = open_sqlite_store(path, synchronous=synchronous, group_commit=group)  # type: ignore[arg-type]
    return await load(store, path.stem, committers, seconds)


async def load(
    opened: AbstractAsyncContextManager[Store], prefix: str, committers: int, seconds: float
) -> float:
    """Commits per second of ``committers`` concurrent committers on a store for about
    ``seconds`` (execution ids start with ``prefix``)."""
    done = 0
    async with opened as store:

        async def committer(index: int) -> None:
            nonlocal done
            execution_id = f"{prefix}-{index}"
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


async def main_postgres(url: str, seconds: float, repeat: int) -> None:
    """Group commit against one transaction per commit on the PostgreSQL store at ``url``."""
    from orbit_actors.store.postgres import open_postgres_store

    results: dict[str, float] = {}
    runs = itertools.count()
    for group in (False, True):
        for committers in (1, 10, 100, 1000):
            name = f"pg_{'group' if group else 'single'}{committers}"
            rates = [
                await load(
                    open_postgres_store(url, group_commit=group),
                    f"{name}-{next(runs)}",
                    committers,
                    seconds,
                )
                for _ in range(repeat)
            ]
            results[name] = statistics.median(rates)
            print(
                f"postgres  {'group' if group else 'single':>6}  {committers:>5} committers: {results[name]:10,.0f} commits/s"
            )
    summary = {key: round(results[key]) for key in ("pg_single1", "pg_single100", "pg_group100")}
    ratio = results["pg_group100"] / results["pg_single100"]
    print(json.dumps({**summary, "pg_group_vs_single100": round(ratio, 2)}))


def run_postgres(url: str, seconds: float, repeat: int) -> None:
    """Run :func:`main_postgres` on ``url``, or on a durable throwaway server for ``auto``."""
    if url != "auto":
        trio.run(main_postgres, url, seconds, repeat)
        return
    sys.path.insert(0, str(ROOT))
    from tests.pg import start_postgres

    server = start_postgres(durable=True)
    if server is None:
        raise SystemExit("no PostgreSQL to run on (apt-get install postgresql)")
    try:
        trio.run(main_postgres, server.create_database("bench"), seconds, repeat)
    finally:
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--seconds", type=float, default=1.5, help="how long each configuration runs"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per configuration (median)")
    parser.add_argument(
        "--dir", type=Path, default=None, help="where the database files go (a disk, not tmpfs)"
    )
    parser.add_argument(
        "--postgres", metavar="URL", help="measure the PostgreSQL store at URL (auto: start one)"
    )
    args = parser.parse_args()
    if args.postgres:
        run_postgres(args.postgres, args.seconds, args.repeat)
        raise SystemExit(0)
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        trio.run(main, args.seconds, args.repeat, Path(folder))
