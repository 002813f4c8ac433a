"""The scheduler actor: one trio task that owns every schedule, fires their occurrences and
serializes every change to them through its mailbox (create, delete, pause, resume, trigger).

Firing an occurrence, in order (execution.md, "Schedules"):
1. ``overlap: skip`` and the schedule's previous execution still runs → the occurrence is
   skipped (a trigger answers ``OVERLAP_SKIPPED``);
2. the occurrence is **claimed** in the store — exactly one claimer ever wins it;
3. the execution ``<schedule_id>:<YYYYMMDDTHHMMSSZ>`` is started (an id already stored for this
   schedule counts as started: a crash fell between the start and step 4);
4. the occurrence is **settled**: its execution recorded, the schedule settled up to it.
A crash between 2 and 4 leaves a claim without an execution; the next process releases it and,
since the schedule was not settled past the occurrence, fires it — once, as the id is fixed.
After downtime, only the latest missed occurrence fires (:meth:`CronRule.due`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import Any

import trio

from ..errors import (
    InternalError,
    InvalidScheduleError,
    OrbitError,
    OverlapSkippedError,
    ScheduleExistsError,
    ScheduleNotFoundError,
)
from ..mailbox import Command, Mailbox
from ..store.base import ScheduleRecord, Store
from ..views import Schedule
from . import commands as cmd
from .clock import Clock
from .cron import CronRule, occurrence_id
from .schedule import ScheduleSpec

log = logging.getLogger("orbit.scheduler")

RECHECK_SECONDS = 60.0  # the longest the scheduler sleeps without looking at the clock
NEXT_OCCURRENCES = 5
LAST_EXECUTIONS = 10
CRASH_BACKOFF_SECONDS = 1.0


@dataclass(frozen=True)
class SchedulerPorts:
    """What the scheduler needs from the rest of the runtime, wired by ``open_runtime``."""

    store: Store
    clock: Clock
    instance_id: str
    check_target: Callable[[ScheduleSpec], None]
    """Refuse a schedule whose workflow is unknown or whose input it would refuse."""
    start_occurrence: Callable[[ScheduleSpec, str], Awaitable[None]]
    """Start (or find, if a crash interrupted an earlier try) an occurrence's execution."""
    is_running: Callable[[str], Awaitable[bool]]
    """True while the execution has not finished."""


@dataclass(eq=False)
class _Entry:
    """One schedule as the actor holds it; ``due_ms`` is the next occurrence to fire."""

    record: ScheduleRecord
    spec: ScheduleSpec
    rule: CronRule
    due_ms: int | None
    last_execution_id: str | None


class Scheduler:
    """The scheduler actor; run it with ``nursery.start(scheduler.run)``."""

    def __init__(self, ports: SchedulerPorts, mailbox_capacity: int = 256) -> None:
        self._ports = ports
        self._store = ports.store
        self._clock = ports.clock
        self.mailbox: Mailbox[Command] = Mailbox("scheduler", mailbox_capacity)
        self._entries: dict[str, _Entry] = {}

    async def request(self, command: Command) -> Any:
        """Send a command and wait for its answer."""
        return await self.mailbox.request(command)

    # -- the actor ----------------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Load every schedule, report started, then fire and serve commands forever. A crash
        reloads the schedules from the store and goes on (the mailbox survives it)."""
        await self._load()
        task_status.started()
        while True:
            try:
                await self._serve()
            except Exception:
                log.exception("scheduler crashed; reloading its schedules from the store")
                await self._reload()

    async def _reload(self) -> None:
        """Reload from the store, pausing between tries so a failing store is not hammered."""
        while True:
            await trio.sleep(CRASH_BACKOFF_SECONDS)
            try:
                await self._load()
                return
            except Exception:
                log.exception("the scheduler could not reload its schedules")

    async def _load(self) -> None:
        released = await self._store.release_claims(except_owner=self._ports.instance_id)
        if released:
            log.info("released %d schedule claims of a stopped server that never fired", released)
        self._entries = {}
        latest = await self._store.occurrence_executions(1)
        for record in await self._store.schedules():
            try:
                self._add(record, latest.get(record.schedule_id, []))
            except InvalidScheduleError as exc:  # e.g. a time zone the system no longer knows
                _log(logging.ERROR, "schedule cannot run", schedule_id=record.schedule_id,
                     reason=exc.message)  # fmt: skip

    def _add(self, record: ScheduleRecord, last: list[str]) -> _Entry:
        spec = ScheduleSpec.of(record)
        rule = spec.rule()
        entry = _Entry(record, spec, rule, None, last[0] if last else None)
        self._plan(entry)
        self._entries[record.schedule_id] = entry
        return entry

    def _plan(self, entry: _Entry) -> None:
        """Set the occurrence to fire next (none while paused)."""
        record = entry.record
        if record.paused:
            entry.due_ms = None
            return
        settled = max(record.settled_ms, record.created_at_ms)
        entry.due_ms = entry.rule.due(settled, self._clock.now_ms())

    async def _serve(self) -> None:
        while True:
            due = [e.due_ms for e in self._entries.values() if e.due_ms is not None]
            deadline = self._clock.deadline(min(due)) if due else math.inf
            # look again at least every minute: a step of the system clock (Clock.resync)
            # moves every wall time closer without waking anyone
            deadline = min(deadline, trio.current_time() + RECHECK_SECONDS)
            command: Command | None = None
            with trio.move_on_at(deadline):
                command = await self.mailbox.receive()
            if command is None:
                await self._fire_due()
            else:
                await self._handle(command)

    async def _fire_due(self) -> None:
        now = self._clock.now_ms()
        ready = [e for e in self._entries.values() if e.due_ms is not None and e.due_ms <= now]
        for entry in sorted(ready, key=lambda e: (e.due_ms, e.record.schedule_id)):
            occurrence = entry.due_ms
            assert occurrence is not None
            try:
                await self._fire(entry, occurrence)
            except OverlapSkippedError as exc:
                _log(logging.INFO, "occurrence skipped", schedule_id=entry.spec.schedule_id,
                     execution_id=occurrence_id(entry.spec.schedule_id, occurrence),
                     code=exc.code)  # fmt: skip
                await self._settle(entry, occurrence, None, None)
            except OrbitError as exc:  # a start refused is also the schedule's last error
                _log(logging.WARNING, "occurrence not started", schedule_id=entry.spec.schedule_id,
                     execution_id=occurrence_id(entry.spec.schedule_id, occurrence),
                     code=exc.code, reason=exc.message)  # fmt: skip
            # past it in memory even when another server claimed it (nothing settled here)
            settled = max(entry.record.settled_ms, occurrence)
            entry.record = replace(entry.record, settled_ms=settled)
            self._plan(entry)

    async def _handle(self, command: Command) -> None:
        reply = command.reply
        try:
            answer = await self._answer(command)
        except OrbitError as exc:
            if reply is not None:
                reply.fail(exc)
            return
        except Exception as exc:
            if reply is not None:
                reply.fail(InternalError(f"the scheduler failed: {exc!r}"))
            raise
        if reply is not None:
            reply.set(answer)

    async def _answer(self, command: Command) -> Any:
        handler = _HANDLERS.get(type(command))
        if handler is None:
            raise InternalError(f"the scheduler has no command {type(command).__name__}")
        return await handler(self, command)

    async def _on_create(self, c: cmd.CreateSchedule) -> tuple[Schedule, bool]:
        return await self._create(c.spec, c.paused)

    async def _on_delete(self, c: cmd.DeleteSchedule) -> None:
        self._entry(c.schedule_id)
        await self._store.delete_schedule(c.schedule_id)
        del self._entries[c.schedule_id]
        _log(logging.INFO, "schedule deleted", schedule_id=c.schedule_id)

    async def _on_pause(self, c: cmd.PauseSchedule) -> Schedule:
        return await self._pause(self._entry(c.schedule_id), c.paused)

    async def _on_trigger(self, c: cmd.TriggerSchedule) -> str:
        return await self._fire(self._entry(c.schedule_id), self._clock.now_ms() // 1000 * 1000)

    async def _on_reload(self, c: cmd.ReloadSchedules) -> None:
        await self._load()

    def reload_soon(self) -> None:
        """Have the actor read every schedule again (a store shared with other servers said
        they changed); a full mailbox already holds work that will see the change later."""
        with suppress(OrbitError):
            self.mailbox.send_nowait(cmd.ReloadSchedules())

    async def _on_show(self, c: cmd.ShowSchedules) -> list[Schedule]:
        if c.schedule_id is not None:
            return [await self._show(self._entry(c.schedule_id))]
        executions = await self._store.occurrence_executions(LAST_EXECUTIONS)
        return [self._view(self._entries[k], executions) for k in sorted(self._entries)]

    def _entry(self, schedule_id: str) -> _Entry:
        entry = self._entries.get(schedule_id)
        if entry is None:
            raise ScheduleNotFoundError(f"schedule `{schedule_id}` not found")
        return entry

    async def _create(self, spec: ScheduleSpec, paused: bool) -> tuple[Schedule, bool]:
        spec.rule()
        self._ports.check_target(spec)
        now = self._clock.now_ms()
        record = ScheduleRecord(spec.schedule_id, spec.stored(), paused, now, settled_ms=now)
        outcome = await self._store.put_schedule(record)
        if outcome == "conflict":
            raise ScheduleExistsError(
                f"schedule `{spec.schedule_id}` already exists with other fields; delete it "
                "first or choose another id"
            )
        if outcome == "unchanged":
            return await self._show(self._entry(spec.schedule_id)), False
        entry = self._add(record, [])
        _log(logging.INFO, "schedule created", schedule_id=spec.schedule_id, cron=spec.cron,
             timezone=spec.timezone)  # fmt: skip
        return await self._show(entry), True

    async def _pause(self, entry: _Entry, paused: bool) -> Schedule:
        await self._store.set_schedule_paused(entry.spec.schedule_id, paused, self._clock.now_ms())
        await self._refresh(entry)
        self._plan(entry)
        return await self._show(entry)

    async def _fire(self, entry: _Entry, occurrence: int) -> str:
        """Fire one occurrence; returns its execution id. Raises OverlapSkippedError when the
        previous execution still runs under ``overlap: skip``, or the start's error."""
        spec = entry.spec
        execution_id = occurrence_id(spec.schedule_id, occurrence)
        previous = entry.last_execution_id
        if (
            spec.overlap == "skip"
            and previous is not None
            and previous != execution_id
            and await self._ports.is_running(previous)
        ):
            raise OverlapSkippedError(
                f"schedule `{spec.schedule_id}`: its previous execution `{previous}` is still "
                "running (overlap: skip)"
            )
        claimed = await self._store.claim_occurrence(
            spec.schedule_id, occurrence, self._ports.instance_id, self._clock.now_ms()
        )
        if not claimed:  # fired already (a second trigger within one second) or being fired
            return execution_id
        try:
            await self._ports.start_occurrence(spec, execution_id)
        except OrbitError as exc:
            await self._settle(entry, occurrence, None, f"{exc.code}: {exc.message}")
            raise
        await self._settle(entry, occurrence, execution_id, None)
        entry.last_execution_id = execution_id
        _log(logging.INFO, "occurrence fired", schedule_id=spec.schedule_id,
             execution_id=execution_id)  # fmt: skip
        return execution_id

    async def _settle(
        self, entry: _Entry, occurrence: int, execution_id: str | None, error: str | None
    ) -> None:
        await self._store.settle_occurrence(entry.spec.schedule_id, occurrence, execution_id, error)
        await self._refresh(entry)

    async def _refresh(self, entry: _Entry) -> None:
        """Take the record back from the store, whose rules say what settling and pausing do."""
        record = await self._store.schedule(entry.spec.schedule_id)
        if record is not None:
            entry.record = record

    async def _show(self, entry: _Entry) -> Schedule:
        """One schedule as the API shows it."""
        latest = await self._store.occurrence_executions(LAST_EXECUTIONS, entry.spec.schedule_id)
        return self._view(entry, latest)

    def _view(self, entry: _Entry, executions: dict[str, list[str]]) -> Schedule:
        """A schedule as the API shows it (``executions``: the latest, by schedule)."""
        record, spec = entry.record, entry.spec
        upcoming: list[int] = []
        if entry.due_ms is not None:
            upcoming = [entry.due_ms, *entry.rule.upcoming(entry.due_ms, NEXT_OCCURRENCES - 1)]
        return Schedule(
            schedule_id=spec.schedule_id, cron=spec.cron, timezone=spec.timezone,
            workflow=spec.workflow, version=spec.version, input=spec.input,
            overlap=spec.overlap, paused=record.paused, next_occurrences_ms=upcoming,
            last_execution_ids=executions.get(spec.schedule_id, []),
            last_error=record.last_error, created_at_ms=record.created_at_ms,
        )  # fmt: skip


_HANDLERS: dict[type[Command], Callable[[Scheduler, Any], Awaitable[Any]]] = {
    cmd.CreateSchedule: Scheduler._on_create,
    cmd.DeleteSchedule: Scheduler._on_delete,
    cmd.PauseSchedule: Scheduler._on_pause,
    cmd.TriggerSchedule: Scheduler._on_trigger,
    cmd.ShowSchedules: Scheduler._on_show,
    cmd.ReloadSchedules: Scheduler._on_reload,
}
"""One handler per command (a table, as the execution actor's)."""


def _log(level: int, message: str, **fields: Any) -> None:
    """One structured line (the fields ride on ``record.orbit``, as event_log.py's do)."""
    log.log(level, message, extra={"orbit": fields})


__all__ = ["ScheduleSpec", "Scheduler", "SchedulerPorts"]
