"""A child process for the kill tests: commits 3-event batches for many executions as fast as it
can and prints each acknowledged ``execution seq`` to stdout, until it is killed."""

from __future__ import annotations

import sys

import trio

from orbit_actors.store import open_sqlite_store

from .helpers import commit

EXECUTIONS = 40


async def main(path: str, generation: int) -> None:
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


if __name__ == "__main__":
    trio.run(main, sys.argv[1], int(sys.argv[2]))
