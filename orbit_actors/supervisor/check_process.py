"""The upgrade check's replay work, in a process of its own: the serving process only reads the
stored histories (undecoded) and hands them over a chunk at a time, so decoding and replaying a
hundred thousand histories takes neither its trio thread nor its GIL.

What crosses the process boundary is text: the candidate's and the base versions' IR (compiled
once per process and kept), and each history as its stored JSON segments.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
from concurrent.futures import Future, ProcessPoolExecutor

from ..decide.compat import first_divergence
from ..history.events import Event, events_from_json
from ..ir import CompiledDefinition, compile_ir

Found = dict[str, tuple[int, str, str]]
"""By execution id, the first divergence: (seq, recorded, candidate)."""

_COMPILED: dict[str, CompiledDefinition] = {}  # in the check process, by IR text


def _compiled(ir: str) -> CompiledDefinition:
    found = _COMPILED.get(ir)
    if found is None:
        found = _COMPILED[ir] = compile_ir(json.loads(ir))
    return found


def check_chunk(
    candidate_ir: str, bases: dict[str, str], items: list[tuple[str, list[str]]]
) -> Found:
    """Replay each history (stored JSON segments) through the candidate; the divergent ones.
    ``bases`` holds the IR of every version the histories may have run under, by hash."""
    candidate = _compiled(candidate_ir)

    def lookup(definition_hash: str) -> CompiledDefinition | None:
        ir = bases.get(definition_hash)
        return _compiled(ir) if ir is not None else None

    found: Found = {}
    for execution_id, segments in items:
        history: list[Event] = [
            event for segment in segments for event in events_from_json(segment)
        ]
        divergence = first_divergence(history, candidate, lookup)
        if divergence is not None:
            found[execution_id] = (divergence.seq, divergence.recorded, divergence.candidate)
    return found


def _in_the_background() -> None:
    """A check is background work: the scheduler gives serving the CPU first."""
    with contextlib.suppress(OSError):
        os.nice(10)


def processes() -> int:
    """Check processes to run: every core but one, which is left to serving (one at least)."""
    return max(1, (os.cpu_count() or 1) - 1)


class CheckProcess:
    """Worker processes for check work (:func:`processes`), started when first needed and
    closed with the runtime."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None

    def submit(
        self, candidate_ir: str, bases: dict[str, str], items: list[tuple[str, list[str]]]
    ) -> Future[Found]:
        """Queue one chunk; its future answers the divergent histories."""
        if self._pool is None:
            context = multiprocessing.get_context("spawn")  # never fork a process running trio
            self._pool = ProcessPoolExecutor(
                max_workers=processes(), mp_context=context, initializer=_in_the_background
            )
        return self._pool.submit(check_chunk, candidate_ir, bases, items)

    def close(self) -> None:
        """Stop the worker process (queued chunks are dropped)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
