"""Instructions per execution of the SQLite commit path alone (the group writer, its thread, the
batcher's SQL, the fsync's preparation), one execution at a time: a start commit, two result
commits that keep the status, and the completing commit, each committed through
``open_sqlite_store`` and awaited before the next, as an execution actor does.

    python bench/commit_path.py [--executions N]
    python bench/commit_path.py --instructions [--executions N]

``--instructions`` runs the script twice under ``valgrind --tool=callgrind`` (with 50 and with
50 + N executions, N 100 by default) and prints the difference of the "Collected" totals divided
by N, which does not move with the machine's load. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import trio
from callgrind import per_execution

from orbit_actors.history.events import Event, SignalReceived
from orbit_actors.store import Commit, ExecutionRow, open_sqlite_store


def _commit(execution_id: str, first_seq: int, count: int, status: str = "running") -> Commit:
    row = ExecutionRow(
        execution_id=execution_id, workflow="bench", version="1.0.0",
        definition_hash="h" * 64, status=status, run=1, started_at_ms=1000,
        closed_at_ms=None if status == "running" else 2000,
    )  # fmt: skip
    events: list[Event] = [
        SignalReceived(seq=first_seq + i, timestamp_ms=1000 + i, name="s", payload={"n": i})
        for i in range(count)
    ]
    return Commit(row, events)


async def run(executions: int) -> None:
    """Commit ``executions`` executions of four commits each, one commit at a time."""
    with tempfile.TemporaryDirectory() as folder:
        async with open_sqlite_store(f"{folder}/bench.db") as store:
            for index in range(executions):
                execution_id = f"bench-{index:06d}"
                await store.commit(_commit(execution_id, 1, 4))
                await store.commit(_commit(execution_id, 5, 3))
                await store.commit(_commit(execution_id, 8, 3))
                await store.commit(_commit(execution_id, 11, 4, status="completed"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--executions", type=int, default=None)
    parser.add_argument("--instructions", action="store_true", help="count under callgrind")
    args = parser.parse_args()
    if args.instructions:
        more = args.executions or 100
        per = per_execution(__file__, 50, more)
        print(f"{per / 1e6:.3f} M instructions per execution (callgrind, {more} executions)")
        print(json.dumps({"instructions_per_exec": round(per)}))
    else:
        count = args.executions or 1000
        began = time.perf_counter()
        trio.run(run, count)
        per = (time.perf_counter() - began) / count * 1e3
        print(f"{per:.2f} ms per execution (four commits, each durable)")
        print(json.dumps({"ms_per_exec": round(per, 3)}))
