"""The upgrade check and step-by-step replay as the server carries them out: read histories from
the store a page at a time (passivated executions stay out of memory; on a shared PostgreSQL
every server's executions are in the one database), and run the pure replay
(:mod:`orbit_actors.decide.compat`, :mod:`orbit_actors.decide.stepping`) in check processes a
chunk at a time, so serving goes on meanwhile. Nothing here writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import Any

import trio

from ..decide.compat import Divergence, first_divergence
from ..decide.stepping import ReplayPoint, check_seq, replay_point
from ..errors import CandidateNameMismatchError, ExecutionNotFoundError, RunNotFoundError
from ..history.events import Event
from ..ir import CompiledDefinition, compile_ir, compile_source
from ..store.base import Store
from ..store.cursor import clamp_limit
from ..store.definitions import DefinitionRegistry
from .check_process import CheckProcess, Found

CHUNK = 250
"""Histories per trip to the check process."""


@dataclass(frozen=True)
class Incompatible:
    """A running execution the candidate could not take over, and where it would diverge."""

    execution_id: str
    run: int
    divergence: Divergence


@dataclass(frozen=True)
class CheckPage:
    """One page of the upgrade check."""

    checked: int
    incompatible: list[Incompatible]
    next_cursor: str | None


class Upgrades:
    """Checks candidates against stored histories and replays runs to a point."""

    def __init__(self, store: Store, definitions: DefinitionRegistry) -> None:
        self._store = store
        self._definitions = definitions
        self._process = CheckProcess()

    async def candidate(self, source: str | dict[str, Any], name: str) -> CompiledDefinition:
        """Compile a candidate of workflow ``name`` (children resolved when registered, not
        required); raises DefinitionError (with line and column) or
        CandidateNameMismatchError."""
        resolve = self._definitions.child_hash
        if isinstance(source, str):
            work = partial(compile_source, source, resolve_child=resolve)
        else:
            work = partial(compile_ir, source, resolve_child=resolve)
        compiled = await trio.to_thread.run_sync(work)
        # decides as the server does: its units' start_by_ms were recorded with this default
        compiled.default_schedule_to_start_ms = self._definitions.schedule_to_start_ms
        if compiled.name != name:
            raise CandidateNameMismatchError(
                f"the candidate is a version of workflow `{compiled.name}`, not of `{name}`; "
                f"check it against /v1/definitions/{compiled.name}/…"
            )
        return compiled

    async def check(
        self,
        base: CompiledDefinition,
        candidate: CompiledDefinition,
        limit: int,
        cursor: str | None,
    ) -> CheckPage:
        """Check one page of the running executions of workflow ``base`` (newest first) that
        run ``base``'s version."""
        page = await self._store.list_executions(
            status="running", workflow=base.name, limit=clamp_limit(limit), cursor=cursor
        )
        rows = [row for row in page.executions if row.version == base.version]
        checked, found = await self.divergences([row.execution_id for row in rows], candidate)
        incompatible = [
            Incompatible(row.execution_id, row.run, found[row.execution_id])
            for row in rows
            if row.execution_id in found
        ]
        return CheckPage(checked, incompatible, page.next_cursor)

    async def divergences(
        self, execution_ids: list[str], candidate: CompiledDefinition
    ) -> tuple[int, dict[str, Divergence]]:
        """How many of the executions have a stored history, and the first divergence of each
        that has one. Histories are read a chunk at a time and each chunk handed to the check
        process at once, so reading the next overlaps replaying this one."""
        candidate_ir = json.dumps(candidate.ir.to_ir_dict(), sort_keys=True)
        bases = {
            r.definition_hash: r.ir for r in self._definitions.records() if r.name == candidate.name
        }
        default_wait = self._definitions.schedule_to_start_ms
        futures: list[Future[Found]] = []
        stored = 0
        found: dict[str, Divergence] = {}
        try:
            for start in range(0, len(execution_ids), CHUNK):
                segments = await self._store.history_segments(execution_ids[start : start + CHUNK])
                stored += len(segments)
                items = list(segments.items())
                futures.append(self._process.submit(candidate_ir, bases, items, default_wait))
            for future in futures:
                chunk = await trio.to_thread.run_sync(future.result, abandon_on_cancel=True)
                found.update({i: Divergence(*d) for i, d in chunk.items()})
        finally:
            for future in futures:
                future.cancel()
        return stored, found

    def close(self) -> None:
        """Stop the check process, if one was started."""
        self._process.close()

    async def replay(
        self, execution_id: str, run: int | None, at: int | None,
        candidate: CompiledDefinition | None,
    ) -> tuple[int, ReplayPoint, Divergence | None]:  # fmt: skip
        """Run ``run`` (the current one by default) of an execution at seq ``at`` (its last by
        default), decided by the definition in force there or by ``candidate``, and the
        candidate's first divergence; raises NOT_FOUND, RUN_NOT_FOUND, SEQ_OUT_OF_RANGE."""
        row = await self._store.execution(execution_id)
        if row is None:
            raise ExecutionNotFoundError()
        if run is not None and not 1 <= run <= row.run:
            raise RunNotFoundError(
                f"execution `{execution_id}` has runs 1 to {row.run}; there is no run {run}"
            )
        number = run or row.run
        history = await self._store.history(execution_id, number)
        point = at if at is not None else len(history)
        check_seq(number, history, point)
        work = partial(_replay, history, point, candidate, self._definitions.by_hash)
        found, divergence = await trio.to_thread.run_sync(work)
        return number, found, divergence


def _replay(
    history: Sequence[Event], at: int, candidate: CompiledDefinition | None,
    base: Callable[[str], CompiledDefinition | None],
) -> tuple[ReplayPoint, Divergence | None]:  # fmt: skip
    point = replay_point(history, at, candidate)
    divergence = first_divergence(history, candidate, base) if candidate is not None else None
    return point, divergence
