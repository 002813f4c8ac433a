"""A store in memory that meets the same contract as the SQLite store, with no threads: every
call completes within the trio loop, so tests may run it under a ``MockClock`` that autojumps."""

from __future__ import annotations

import copy
from dataclasses import replace

import trio

from ..errors import StorageError
from ..history.events import Event, events_to_json
from ..store.base import (
    KEPT_CLAIMS,
    Admission,
    AlreadyStored,
    Commit,
    ConcurrencyFull,
    DefinitionRecord,
    ExecutionPage,
    ExecutionRow,
    FlowSlots,
    Purged,
    PutDefinition,
    PutOutcome,
    Retention,
    ScheduleRecord,
    StoreStatistics,
    WakeEntry,
    WorkerRecord,
)
from ..store.cursor import clamp_limit, decode_cursor, encode_cursor
from ..store.flow_slots import FREED_KEPT_MS, admits, claimed_at, freed_at, slot_change
from ..store.rate_log import RateBook, Window, charged
from ..store.rules import WorkerTouches, check_commit
from .memory_batches import MemoryBatches


class MemoryStore(MemoryBatches):
    """The :class:`~orbit_actors.store.base.Store` contract in memory. ``fail_next_commit`` makes
    the next write raise StorageError, as a full disk would."""

    def __init__(self) -> None:
        super().__init__()
        self._definitions: dict[tuple[str, str], DefinitionRecord] = {}
        self._executions: dict[str, tuple[int, ExecutionRow]] = {}
        self._history: dict[tuple[str, int], list[Event]] = {}
        self._workers: dict[str, WorkerRecord] = {}
        self._touches = WorkerTouches()
        self._schedules: dict[str, ScheduleRecord] = {}
        self._claims: dict[tuple[str, int], tuple[str, str | None]] = {}
        self._slots: dict[str, dict[str, str]] = {}  # key → execution id → running | queued
        self._freed: dict[str, dict[str, int]] = {}  # key → execution id → when given back
        self._rates: dict[Window, list[int]] = {}  # (task, key) → dispatch instants
        self._order = 0
        self._stats = StoreStatistics()
        self.fail_next_commit: str | None = None

    def statistics(self) -> StoreStatistics:
        """Commit counters."""
        return self._stats

    async def _write(self, weight: int = 1) -> None:
        await trio.lowlevel.checkpoint()
        if self.fail_next_commit is not None:
            message, self.fail_next_commit = self.fail_next_commit, None
            raise StorageError(message)
        stats = self._stats
        stats.commits += 1
        stats.batches += 1
        stats.events += weight
        stats.last_batch = stats.largest_batch = 1

    async def put_definition(self, record: DefinitionRecord) -> PutDefinition:
        """Register a definition."""
        await self._write()
        existing = self._definitions.get((record.name, record.version))
        if existing is not None:
            same = existing.definition_hash == record.definition_hash
            return PutDefinition("unchanged" if same else "conflict", existing)
        self._definitions[(record.name, record.version)] = record
        return PutDefinition("created", record)

    async def definitions(self) -> list[DefinitionRecord]:
        """Every registered definition, in registration order."""
        await trio.lowlevel.checkpoint()
        return list(self._definitions.values())

    async def commit(self, commit: Commit) -> None:
        """Append events and the summary row atomically."""
        row = commit.row
        found = self._executions.get(row.execution_id)
        if commit.create and found is not None:
            raise AlreadyStored(row.execution_id)
        current = (found[1].run, found[1].last_seq) if found else None
        check_commit(current, commit)
        await self._write(len(commit.events))
        if commit.admit is not None and not self._admits(commit.admit):  # checked as written
            raise ConcurrencyFull(commit.admit.key)
        if commit.rates:
            self._charge(commit)
        self._take_slot(commit)
        key = (row.execution_id, row.run)
        history = None if commit.rollover else self._history.get(key)
        if history is None:
            history = self._history[key] = []
        # Events are frozen and nothing writes into their payloads once committed, so the store
        # keeps the very objects (a deep copy per commit was a quarter of bench/cpu.py's run);
        # the list grows in place, since every read returns a copy of it.
        history += commit.events
        last_seq = history[-1].seq if history else 0
        if found is None:
            self._order += 1
            self._executions[row.execution_id] = (self._order, _stored_row(row, row, last_seq))
        else:
            self._executions[row.execution_id] = (found[0], _stored_row(found[1], row, last_seq))

    def _admits(self, admission: Admission) -> bool:
        slots = self._slots.get(admission.key, {})
        running = sum(state == "running" for state in slots.values())
        after = claimed_at(admission)
        freed = sum(at > after for at in self._freed.get(admission.key, {}).values())
        return admits(admission, running, len(slots) - running, freed)

    def _charge(self, commit: Commit) -> None:
        """Count the commit's dispatches against their rate limits, or raise RateLimited."""
        book = RateBook({window: self._rates.get(window, []) for window in charged([commit])})
        limited = book.charge(commit)
        if limited is not None:
            raise limited
        for task, key, at_ms, expires_ms in book.added:
            kept = self._rates.setdefault((task, key), [])
            kept[:] = sorted(at for at in [*kept, at_ms] if at > at_ms - (expires_ms - at_ms))

    def _take_slot(self, commit: Commit) -> None:
        change = slot_change(commit)
        if change is None:
            return
        key, execution_id = commit.row.flow_key or "", commit.row.execution_id
        slots, freed = self._slots.setdefault(key, {}), self._freed.setdefault(key, {})
        if change == "free":
            slots.pop(execution_id, None)
            at = freed[execution_id] = freed_at(commit)
            for gone in [i for i, t in freed.items() if t < at - FREED_KEPT_MS]:
                del freed[gone]
        else:
            freed.pop(execution_id, None)
            slots[execution_id] = change  # a dict keeps arrival order; a promotion keeps its place

    async def flow_slots(self, key: str, queued_limit: int | None = None) -> FlowSlots:
        """The running and queued executions of ``key``, oldest first."""
        await trio.lowlevel.checkpoint()
        slots = self._slots.get(key, {})
        queued = [i for i, state in slots.items() if state == "queued"]
        return FlowSlots(
            running=[i for i, state in slots.items() if state == "running"],
            queued=queued[:queued_limit] if queued_limit is not None else queued,
        )

    async def queued_keys(self) -> list[str]:
        """Every concurrency key with queued executions."""
        await trio.lowlevel.checkpoint()
        return sorted(k for k, slots in self._slots.items() if "queued" in slots.values())

    async def history(self, execution_id: str, run: int | None = None) -> list[Event]:
        """The events of the current run, or of run ``run``."""
        await trio.lowlevel.checkpoint()
        found = self._executions.get(execution_id)
        if found is None:
            return []
        return list(self._history.get((execution_id, run or found[1].run), []))

    async def execution(self, execution_id: str) -> ExecutionRow | None:
        """The summary row of an execution."""
        await trio.lowlevel.checkpoint()
        found = self._executions.get(execution_id)
        return found[1] if found else None

    async def running_ids(self) -> list[str]:
        """Ids of every execution that has not finished."""
        await trio.lowlevel.checkpoint()
        rows = sorted(self._executions.values(), key=lambda item: item[0])
        return [row.execution_id for _, row in rows if row.status == "running"]

    async def wake_index(self, due_by_ms: int | None = None) -> list[WakeEntry]:
        """The wake-up index: every execution that has not finished, oldest first; with
        ``due_by_ms``, the busy ones and those due by then."""
        await trio.lowlevel.checkpoint()
        return [
            entry
            for _, entry in self._wake_entries(0)
            if due_by_ms is None
            or entry.busy
            or (entry.wake_at_ms is not None and entry.wake_at_ms <= due_by_ms)
        ]

    async def wake_index_page(self, after: int, limit: int) -> tuple[list[WakeEntry], int]:
        """Up to ``limit`` running executions after position ``after``, oldest first."""
        await trio.lowlevel.checkpoint()
        page = self._wake_entries(after)[:limit]
        return [entry for _, entry in page], page[-1][0] if page else after

    def _wake_entries(self, after: int) -> list[tuple[int, WakeEntry]]:
        rows = sorted(self._executions.values(), key=lambda item: item[0])
        return [
            (ord_, WakeEntry(row.execution_id, row.wake_at_ms, row.busy, row.parent_id is None))
            for ord_, row in rows
            if row.status == "running" and ord_ > after
        ]

    async def histories(self, execution_ids: list[str]) -> dict[str, list[Event]]:
        """The current run's events of each execution (ids not stored are left out)."""
        await trio.lowlevel.checkpoint()
        found = {i: self._executions.get(i) for i in execution_ids}
        return {
            i: list(self._history.get((i, entry[1].run), []))
            for i, entry in found.items()
            if entry is not None
        }

    async def history_segments(self, execution_ids: list[str]) -> dict[str, list[str]]:
        """The current run's events of each execution as one JSON array each."""
        found = await self.histories(execution_ids)
        return {i: [events_to_json(events)] for i, events in found.items()}

    async def list_executions(
        self,
        *,
        status: str | None = None,
        workflow: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        paused: bool | None = None,
    ) -> ExecutionPage:
        """Executions newest first, filtered."""
        await trio.lowlevel.checkpoint()
        limit, before = clamp_limit(limit), decode_cursor(cursor)
        rows = sorted(self._executions.values(), key=lambda item: -item[0])
        chosen = [
            (order, row)
            for order, row in rows
            if status in (None, row.status)
            and workflow in (None, row.workflow)
            and paused in (None, row.paused)
            and (before is None or order < before)
        ][: limit + 1]
        next_cursor = encode_cursor(chosen[limit - 1][0]) if len(chosen) > limit else None
        return ExecutionPage([row for _, row in chosen[:limit]], next_cursor)

    async def count_by_status(self) -> dict[str, int]:
        """How many executions have each status."""
        await trio.lowlevel.checkpoint()
        counts: dict[str, int] = {}
        for _, row in self._executions.values():
            counts[row.status] = counts.get(row.status, 0) + 1
        return counts

    async def upsert_worker(self, record: WorkerRecord) -> None:
        """Record a registration (keeps the first ``registered_at_ms``)."""
        await self._write()
        old = self._workers.get(record.worker_id)
        if old is not None:
            record = replace(record, registered_at_ms=old.registered_at_ms)
        self._workers[record.worker_id] = record
        self._touches.registered(record.worker_id, record.last_seen_ms)

    async def touch_worker(self, worker_id: str, now_ms: int) -> None:
        """Note that a worker was seen; written at most once a second per worker."""
        if not self._touches.due(worker_id, now_ms):
            return
        await self._write()
        old = self._workers.get(worker_id)
        if old is not None:
            self._workers[worker_id] = replace(old, last_seen_ms=max(old.last_seen_ms, now_ms))

    async def workers(self) -> list[WorkerRecord]:
        """Every worker ever registered."""
        await trio.lowlevel.checkpoint()
        return [self._workers[k] for k in sorted(self._workers)]

    async def put_schedule(self, record: ScheduleRecord) -> PutOutcome:
        """Create a schedule."""
        await self._write()
        old = self._schedules.get(record.schedule_id)
        if old is not None:
            return "unchanged" if old.spec == record.spec else "conflict"
        self._schedules[record.schedule_id] = copy.deepcopy(record)
        return "created"

    async def schedule(self, schedule_id: str) -> ScheduleRecord | None:
        """One schedule."""
        await trio.lowlevel.checkpoint()
        return self._schedules.get(schedule_id)

    async def schedules(self) -> list[ScheduleRecord]:
        """Every schedule."""
        await trio.lowlevel.checkpoint()
        return [self._schedules[k] for k in sorted(self._schedules)]

    async def delete_schedule(self, schedule_id: str) -> bool:
        """Delete a schedule and its claims."""
        await self._write()
        self._claims = {k: v for k, v in self._claims.items() if k[0] != schedule_id}
        return self._schedules.pop(schedule_id, None) is not None

    async def set_schedule_paused(self, schedule_id: str, paused: bool, now_ms: int) -> bool:
        """Pause or resume a schedule; resuming settles it up to ``now_ms``."""
        await self._write()
        old = self._schedules.get(schedule_id)
        if old is None:
            return False
        settled = old.settled_ms if paused else max(old.settled_ms, now_ms)
        self._schedules[schedule_id] = replace(old, paused=paused, settled_ms=settled)
        return True

    async def claim_occurrence(
        self, schedule_id: str, occurrence_ms: int, owner: str, now_ms: int
    ) -> bool:
        """Claim one occurrence: True for exactly one claimer."""
        await self._write()
        if (schedule_id, occurrence_ms) in self._claims:
            return False
        self._claims[(schedule_id, occurrence_ms)] = (owner, None)
        return True

    async def settle_occurrence(
        self, schedule_id: str, occurrence_ms: int, execution_id: str | None, error: str | None
    ) -> None:
        """Record how an occurrence ended and settle the schedule up to it."""
        await self._write()
        key = (schedule_id, occurrence_ms)
        if key in self._claims and execution_id is not None:
            self._claims[key] = (self._claims[key][0], execution_id)
            fired = sorted(k for k, (_, done) in self._claims.items()
                           if k[0] == schedule_id and done is not None)  # fmt: skip
            for old_key in fired[: max(0, len(fired) - KEPT_CLAIMS)]:
                del self._claims[old_key]
        elif key in self._claims and self._claims[key][1] is None:
            del self._claims[key]  # it did not start: the claim is given back
        old = self._schedules.get(schedule_id)
        if old is not None:
            last_error = None if execution_id is not None else (error or old.last_error)
            settled = max(old.settled_ms, occurrence_ms)
            self._schedules[schedule_id] = replace(old, settled_ms=settled, last_error=last_error)

    async def occurrence_executions(
        self, limit: int, schedule_id: str | None = None
    ) -> dict[str, list[str]]:
        """By schedule, the executions of its latest fired occurrences, newest first."""
        await trio.lowlevel.checkpoint()
        return {
            sid: fired[:limit]
            for sid in sorted({k[0] for k in self._claims})
            if schedule_id in (None, sid) and (fired := self._fired(sid))
        }

    def _fired(self, schedule_id: str) -> list[str]:
        """The executions of a schedule's fired occurrences, newest first."""
        fired = sorted(
            (occurrence, execution_id)
            for (sid, occurrence), (_, execution_id) in self._claims.items()
            if sid == schedule_id and execution_id is not None
        )
        return [execution_id for _, execution_id in reversed(fired)]

    # -- retention ------------------------------------------------------------------------
    async def purge(self, execution_id: str) -> Purged:
        """Delete a finished execution and its finished descendants."""
        await self._write()
        return self._purge(execution_id)

    def _purge(self, execution_id: str) -> Purged:
        found = self._executions.get(execution_id)
        if found is None:
            return Purged("missing")
        if found[1].closed_at_ms is None:
            return Purged("running")
        ids, todo = [execution_id], [execution_id]
        while todo:
            parent = todo.pop()
            children = [
                row.execution_id
                for _, row in self._executions.values()
                if row.parent_id == parent and row.closed_at_ms is not None
            ]
            ids += children
            todo += children
        for each in ids:
            del self._executions[each]
            for key in [k for k in self._history if k[0] == each]:
                del self._history[key]
        return Purged("purged", ids)

    async def purge_due(self, retention: Retention, now_ms: int, limit: int) -> list[str]:
        """Purge up to ``limit`` executions whose retention has passed."""
        await self._write()
        due = [
            row.execution_id
            for _, row in self._executions.values()
            if self._due(row, retention, now_ms)
        ]
        purged: list[str] = []
        for execution_id in due[:limit]:
            if execution_id in self._executions:
                purged += self._purge(execution_id).ids
        return purged

    def _due(self, row: ExecutionRow, retention: Retention, now_ms: int) -> bool:
        if row.closed_at_ms is None:
            return False
        if row.parent_id is not None and row.parent_id in self._executions:
            return False
        keep = retention.by_hash.get(row.definition_hash, retention.default_ms)
        if row.parent_id is not None:
            keep = retention.default_ms  # a child left behind by its purged parent
        return keep is not None and row.closed_at_ms <= now_ms - keep

    async def reclaim(self) -> None:
        """Memory needs nothing given back."""
        await trio.lowlevel.checkpoint()

    async def release_claims(self, except_owner: str) -> int:
        """Release other processes' claims that never fired."""
        await self._write()
        dead = [
            k
            for k, (owner, fired) in self._claims.items()
            if owner != except_owner and fired is None
        ]
        for key in dead:
            del self._claims[key]
        return len(dead)


def _stored_row(base: ExecutionRow, row: ExecutionRow, last_seq: int) -> ExecutionRow:
    """The row a commit leaves: what it changes from ``row``, the rest kept from ``base`` (the
    first row stored), or ``row`` itself when that changes nothing (the actor builds a fresh
    row per commit and keeps none). Built directly: ``dataclasses.replace`` cost more than the
    commit."""
    if (
        row.last_seq == last_seq
        and row.workflow == base.workflow
        and row.started_at_ms == base.started_at_ms
        and row.parent_id == base.parent_id
        and row.schedule_id == base.schedule_id
    ):
        return row
    return ExecutionRow(
        execution_id=base.execution_id, workflow=base.workflow, version=row.version,
        definition_hash=row.definition_hash, status=row.status, run=row.run,
        started_at_ms=base.started_at_ms, closed_at_ms=row.closed_at_ms,
        parent_id=base.parent_id, schedule_id=base.schedule_id, last_seq=last_seq,
        wake_at_ms=row.wake_at_ms, busy=row.busy, paused=row.paused, flow_key=row.flow_key,
    )  # fmt: skip
