"""A child process for the kill tests: commits 3-event batches for many executions as fast as it
can and prints each acknowledged ``execution seq`` to stdout, until it is killed. With ``touch``,
one more task notes a worker's sign of life before each of its commits, and prints ``touched T``
once the commit after the sign of life at T is acknowledged."""

from __future__ import annotations

import sys

import trio

from orbit_actors.store import Store, WorkerRecord, open_sqlite_store

from .helpers import commit

EXECUTIONS = 40


async def toucher(store: Store, generation: int) -> None:
    """Signs of life (each due: a second apart), each followed by a commit."""
    start = generation * 10**9
    await store.upsert_worker(WorkerRecord("w", "python", "sdk", [], start, start))
    execution_id = f"g{generation}-touch"
    for n in range(1, 10**6):
        await store.touch_worker("w", start + n * 1000)
        await store.commit(commit(execution_id, 3 * n - 2, 3))
        sys.stdout.write(f"touched {start + n * 1000}\n")
        sys.stdout.flush()


async def main(path: str, generation: int, touch: bool) -> None:
    async with open_sqlite_store(path) as store:
        next_seq: dict[str, int] = {}
        for index in range(EXECUTIONS):
            execution_id = f"g{generation}-e{index}"
            row = await store.execution(execution_id)
            next_seq[execution_id] = row.last_seq + 1 if row else 1

        async def committer(execution_id: str) -> None:
            while True:
                first = next_seq[execution_id]
                await store.commit(commit(execution_id, first, 3, pad=300))
                next_seq[execution_id] = first + 3
                sys.stdout.write(f"{execution_id} {first + 2}\n")
                sys.stdout.flush()

        print("ready", flush=True)
        async with trio.open_nursery() as nursery:
            for execution_id in next_seq:
                nursery.start_soon(committer, execution_id)
            if touch:
                nursery.start_soon(toucher, store, generation)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], int(sys.argv[2]), sys.argv[3:] == ["touch"])
