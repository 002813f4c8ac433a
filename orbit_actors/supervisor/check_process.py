"""The upgrade check's replay work, in processes of their own: the serving process only reads the
stored histories (undecoded) and hands them over a chunk at a time, so decoding and replaying a
hundred thousand histories takes neither its trio thread nor its GIL.

What crosses the process boundary is text: the candidate's and the base versions' IR (compiled
once per process and kept), and each history as its stored JSON segments. The work itself is
the pure :func:`~orbit_actors.decide.compat_chunk.check_histories`; a check process imports
only the pure core, so it starts in half the time the whole server would take.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import Future, ProcessPoolExecutor

from ..decide.compat_chunk import Found, check_histories

__all__ = ["CheckProcess", "Found", "processes"]

NICENESS = 10
"""How much a check process defers to serving (``nice``): the scheduler gives serving the CPU
first."""


MOST_PROCESSES = 4
"""A page of the check (at most 1,000 executions) is at most four chunks, so more processes
would only hold memory."""


def processes() -> int:
    """Check processes to run: one per core, up to :data:`MOST_PROCESSES`. They run niced
    (:data:`NICENESS`), so the scheduler still hands a core to serving whenever it has work:
    the check takes only the CPU that serving leaves idle."""
    return max(1, min(os.cpu_count() or 1, MOST_PROCESSES))


class CheckProcess:
    """Worker processes for check work (:func:`processes`), started when first needed and
    closed with the runtime."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None

    def submit(
        self,
        candidate_ir: str,
        bases: dict[str, str],
        items: list[tuple[str, list[str]]],
        schedule_to_start_ms: int | None = None,
    ) -> Future[Found]:
        """Queue one chunk; its future answers the divergent histories."""
        if self._pool is None:
            context = multiprocessing.get_context("spawn")  # never fork a process running trio
            self._pool = ProcessPoolExecutor(
                max_workers=processes(), mp_context=context,
                initializer=os.nice, initargs=(NICENESS,),  # raising niceness never fails
            )  # fmt: skip
        return self._pool.submit(check_histories, candidate_ir, bases, items, schedule_to_start_ms)

    def close(self) -> None:
        """Stop the worker processes (queued chunks are dropped)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
