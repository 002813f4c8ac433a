"""The scheduler actor under an autojumping MockClock on the memory store: occurrences fire at
their wall times in their time zone (DST included), once each across restarts, only the latest
after downtime, never what passed while paused; overlap skip; triggers; refusals."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest
import trio
from trio.testing import MockClock

from orbit_actors.actors.clock import Clock
from orbit_actors.actors.cron import occurrence_id
from orbit_actors.actors.scheduler import ScheduleSpec
from orbit_actors.errors import (
    InvalidInputError,
    InvalidScheduleError,
    OverlapSkippedError,
    ScheduleExistsError,
    ScheduleNotFoundError,
    WorkflowNotFoundError,
)
from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.store.base import ExecutionRow
from orbit_actors.testing import MemoryStore

from .conftest import workflow

NAP = workflow("""
input: {type: object, properties: {minutes: {type: integer}}}
steps:
  - {id: nap, sleep: 25m}
""")
QUICK = workflow("steps:\n  - {id: nap, sleep: 1s}\n", name="quick")
HOUR = 3600.0
DAY = 24 * HOUR


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


async def register(runtime: Runtime, clock: MockClock, source: str) -> None:
    """Register a definition without letting time pass: it compiles in a worker thread, and an
    autojumping clock would jump (and fire schedules) while the thread runs."""
    clock.autojump_threshold = math.inf
    try:
        await runtime.register_definition(source)
    finally:
        clock.autojump_threshold = 0


@asynccontextmanager
async def running(
    store: MemoryStore, at: str, clock: MockClock, config: RuntimeConfig | None = None
) -> AsyncIterator[Runtime]:
    """A runtime on ``store`` whose wall clock reads ``at`` (UTC) once the test workflows are
    registered."""
    clock.autojump_threshold = math.inf
    async with open_runtime(store, config, clock=Clock(ms(at))) as runtime:
        await register(runtime, clock, NAP)
        await register(runtime, clock, QUICK)
        yield runtime


async def fired(runtime: Runtime, schedule_id: str) -> list[str]:
    """The execution ids a schedule started, oldest first."""
    page = await runtime.list_executions(limit=1000)
    return sorted(row.execution_id for row in page.executions if row.schedule_id == schedule_id)


def at(schedule_id: str, *times: str) -> list[str]:
    return [occurrence_id(schedule_id, ms(t)) for t in times]


def spec(cron: str, **fields: object) -> ScheduleSpec:
    values: dict[str, object] = {"schedule_id": "s", "cron": cron, "workflow": "quick", **fields}
    return ScheduleSpec(**values)  # type: ignore[arg-type]


async def test_an_hourly_schedule_starts_one_execution_per_hour_named_for_its_occurrence(
    autojump_clock: MockClock,
) -> None:
    async with running(MemoryStore(), "2026-01-01T00:30", autojump_clock) as runtime:
        view, created = await runtime.create_schedule(spec("@hourly"))
        assert created and view.next_occurrences_ms[:2] == [
            ms("2026-01-01T01:00"), ms("2026-01-01T02:00"),
        ]  # fmt: skip
        await trio.sleep(2 * HOUR + 60)
        assert await fired(runtime, "s") == at("s", "2026-01-01T01:00", "2026-01-01T02:00")
        row = await runtime.store.execution("s:20260101T010000Z")
        assert isinstance(row, ExecutionRow) and row.schedule_id == "s"
        (view,) = await runtime.schedules("s")
        assert view.last_execution_ids == at("s", "2026-01-01T02:00", "2026-01-01T01:00")


async def test_berlin_spring_forward_skips_the_wall_time_that_does_not_exist(
    autojump_clock: MockClock,
) -> None:
    async with running(MemoryStore(), "2026-03-27T12:00", autojump_clock) as runtime:
        await runtime.create_schedule(spec("30 2 * * *", timezone="Europe/Berlin"))
        await trio.sleep(4 * DAY)
        assert await fired(runtime, "s") == at(
            "s", "2026-03-28T01:30", "2026-03-30T00:30", "2026-03-31T00:30"
        )  # 29 March 02:30 never happened in Berlin


async def test_berlin_fall_back_fires_a_repeated_wall_time_once_at_the_first(
    autojump_clock: MockClock,
) -> None:
    async with running(MemoryStore(), "2026-10-24T12:00", autojump_clock) as runtime:
        await runtime.create_schedule(spec("30 2 * * *", timezone="Europe/Berlin"))
        await trio.sleep(2 * DAY)
        # 25 October 02:30 happens at 00:30Z (CEST) and again at 01:30Z (CET): fired at the first
        assert await fired(runtime, "s") == at("s", "2026-10-25T00:30", "2026-10-26T01:30")


async def test_overlap_skip_does_not_start_while_the_previous_execution_runs(
    autojump_clock: MockClock,
) -> None:
    async with running(MemoryStore(), "2026-01-01T00:05", autojump_clock) as runtime:
        await runtime.create_schedule(spec("*/10 * * * *", workflow="wf"))
        await runtime.create_schedule(spec("*/10 * * * *", workflow="wf", schedule_id="a",
                                           overlap="allow"))  # fmt: skip
        await trio.sleep(HOUR)
        # each execution naps 25 minutes: under skip, :10 runs until :35, so :20 and :30 are skipped
        assert await fired(runtime, "s") == at("s", "2026-01-01T00:10", "2026-01-01T00:40")
        assert len(await fired(runtime, "a")) == 6


async def test_a_trigger_applies_overlap_ignores_paused_and_is_idempotent_within_a_second(
    autojump_clock: MockClock,
) -> None:
    async with running(MemoryStore(), "2026-01-01T00:00:10", autojump_clock) as runtime:
        await runtime.create_schedule(spec("@daily", workflow="wf"), paused=True)
        first = await runtime.trigger_schedule("s")
        assert first == "s:20260101T000010Z"
        assert await runtime.trigger_schedule("s") == first  # the same second: the same occurrence
        await trio.sleep(1)
        with pytest.raises(OverlapSkippedError, match="previous execution `s:20260101T000010Z`"):
            await runtime.trigger_schedule("s")
        await trio.sleep(HOUR)
        assert await runtime.trigger_schedule("s") == "s:20260101T010011Z"
        assert await fired(runtime, "s") == [first, "s:20260101T010011Z"]


async def test_after_downtime_only_the_latest_missed_occurrence_fires(
    autojump_clock: MockClock,
) -> None:
    store = MemoryStore()
    async with running(store, "2026-01-01T00:30", autojump_clock) as runtime:
        await runtime.create_schedule(spec("@hourly"))
    async with running(store, "2026-01-01T05:30", autojump_clock) as runtime:
        await trio.sleep(1)
        assert await fired(runtime, "s") == at("s", "2026-01-01T05:00")
        await trio.sleep(HOUR)
        assert await fired(runtime, "s") == at("s", "2026-01-01T05:00", "2026-01-01T06:00")


async def test_a_restart_between_claim_and_start_fires_the_occurrence_once(
    autojump_clock: MockClock,
) -> None:
    store = MemoryStore()
    async with running(store, "2026-01-01T00:30", autojump_clock) as runtime:
        await runtime.create_schedule(spec("@hourly"))
    # a server claimed 01:00 and died before starting it
    assert await store.claim_occurrence("s", ms("2026-01-01T01:00"), "dead-server", 0)
    async with running(store, "2026-01-01T01:00:05", autojump_clock) as runtime:
        await trio.sleep(1)
        assert await fired(runtime, "s") == at("s", "2026-01-01T01:00")
        (view,) = await runtime.schedules("s")
        assert view.last_execution_ids == at("s", "2026-01-01T01:00")


async def test_a_restart_between_start_and_settle_fires_the_occurrence_once(
    autojump_clock: MockClock,
) -> None:
    store = MemoryStore()
    occurrence = ms("2026-01-01T01:00")
    async with running(store, "2026-01-01T00:30", autojump_clock) as runtime:
        await runtime.create_schedule(spec("@hourly", workflow="wf"))
        # a server claimed 01:00 and started its execution, then died before settling it
        assert await store.claim_occurrence("s", occurrence, "dead-server", 0)
        await runtime.start("wf", execution_id="s:20260101T010000Z", schedule_id="s")
        await register(
            runtime, autojump_clock, NAP.replace("1.0.0", "1.1.0")
        )  # a newer version since
    async with running(store, "2026-01-01T01:00:05", autojump_clock) as runtime:
        await trio.sleep(1)
        assert await fired(runtime, "s") == at("s", "2026-01-01T01:00")
        (view,) = await runtime.schedules("s")
        assert view.last_execution_ids == at("s", "2026-01-01T01:00")
        assert view.last_error is None


async def test_resume_does_not_fire_what_was_missed_while_paused(
    autojump_clock: MockClock,
) -> None:
    store = MemoryStore()
    async with running(store, "2026-01-01T00:30", autojump_clock) as runtime:
        await runtime.create_schedule(spec("@hourly"))
        paused = await runtime.pause_schedule("s")
        assert paused.paused and paused.next_occurrences_ms == []
        await trio.sleep(3 * HOUR)
        resumed = await runtime.pause_schedule("s", paused=False)
        assert resumed.next_occurrences_ms[0] == ms("2026-01-01T04:00")
        await trio.sleep(1)
        assert await fired(runtime, "s") == []
    async with running(store, "2026-01-01T03:45", autojump_clock) as runtime:  # nor after a restart
        await trio.sleep(1)
        assert await fired(runtime, "s") == []


async def test_an_occurrence_refused_by_the_active_limit_is_skipped_and_shown(
    autojump_clock: MockClock,
) -> None:
    config = RuntimeConfig(max_active_executions=1)
    async with running(MemoryStore(), "2026-01-01T00:30", autojump_clock, config) as runtime:
        await runtime.start("wf", execution_id="busy")  # naps until 00:55
        await runtime.create_schedule(spec("*/10 * * * *"))
        await trio.sleep(11 * 60)
        (view,) = await runtime.schedules("s")
        assert (view.last_error or "").startswith(
            "RESOURCE_EXHAUSTED: 1 executions are already running"
        )
        assert view.last_execution_ids == []
        await trio.sleep(20 * 60)  # 00:50 is refused too; 01:00 starts
        (view,) = await runtime.schedules("s")
        assert view.last_error is None
        assert view.last_execution_ids == at("s", "2026-01-01T01:00")


async def test_without_a_version_each_occurrence_starts_the_latest_version(
    autojump_clock: MockClock,
) -> None:
    async with running(MemoryStore(), "2026-01-01T00:30", autojump_clock) as runtime:
        await runtime.create_schedule(spec("@hourly", workflow="wf"))
        await trio.sleep(HOUR)
        await register(runtime, autojump_clock, NAP.replace("1.0.0", "1.1.0"))
        await trio.sleep(HOUR)
        versions = [(await runtime.describe(e)).version for e in await fired(runtime, "s")]
        assert versions == ["1.0.0", "1.1.0"]


async def test_creating_is_idempotent_for_the_same_fields_and_refused_for_others(
    autojump_clock: MockClock,
) -> None:
    async with running(MemoryStore(), "2026-01-01T00:30", autojump_clock) as runtime:
        assert (await runtime.create_schedule(spec("@hourly")))[1]
        assert not (await runtime.create_schedule(spec("@hourly")))[1]
        with pytest.raises(ScheduleExistsError, match="schedule `s` already exists"):
            await runtime.create_schedule(spec("@daily"))
        await runtime.delete_schedule("s")
        with pytest.raises(ScheduleNotFoundError, match="schedule `s` not found"):
            await runtime.delete_schedule("s")
        for call in (runtime.trigger_schedule("s"), runtime.pause_schedule("s"),
                     runtime.schedules("s")):  # fmt: skip
            with pytest.raises(ScheduleNotFoundError):
                await call


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [({"cron": "61 * * * *"}, InvalidScheduleError, "cron: "),
     ({"timezone": "Mars/Olympus"}, InvalidScheduleError, "timezone: "),
     ({"overlap": "queue"}, InvalidScheduleError, "overlap: "),
     ({"schedule_id": "no spaces"}, InvalidScheduleError, "schedule_id: "),
     ({"workflow": "nope"}, WorkflowNotFoundError, "workflow nope is not registered"),
     ({"workflow": "wf", "input": {"minutes": "x"}}, InvalidInputError, "workflow input is invalid"),
     ({"input": [1]}, InvalidInputError, "input: ")],
)  # fmt: skip
async def test_a_bad_schedule_is_refused_and_nothing_is_stored(
    autojump_clock: MockClock, fields: dict[str, object], error: type[Exception], message: str
) -> None:
    async with running(MemoryStore(), "2026-01-01T00:30", autojump_clock) as runtime:
        with pytest.raises(error) as caught:
            await runtime.create_schedule(spec(**{"cron": "@hourly", **fields}))  # type: ignore[arg-type]
        assert str(caught.value).startswith(message)
        assert await runtime.schedules() == []
        assert await runtime.store.schedules() == []


async def test_a_forward_step_of_the_system_clock_is_followed_within_a_minute(
    autojump_clock: MockClock,
) -> None:
    started, step = trio.current_time(), [0]

    def system() -> int:  # the system clock: follows trio's time, plus any step it took
        return ms("2026-01-01T00:30") + int((trio.current_time() - started) * 1000) + step[0]

    autojump_clock.autojump_threshold = math.inf
    async with open_runtime(MemoryStore(), clock=Clock(system=system)) as runtime:
        await register(runtime, autojump_clock, QUICK)
        await runtime.create_schedule(spec("@hourly"))
        await trio.sleep(5 * 60)
        step[0] = 45 * 60 * 1000  # 00:35 becomes 01:20: the 01:00 occurrence is overdue
        assert runtime.clock.resync() == step[0]
        assert runtime.clock.now_ms() == ms("2026-01-01T01:20")
        await trio.sleep(61)
        assert await fired(runtime, "s") == at("s", "2026-01-01T01:00")


async def test_a_backward_step_of_the_system_clock_is_not_followed(
    autojump_clock: MockClock,
) -> None:
    clock = Clock(ms("2026-01-01T00:30"), system=lambda: ms("2026-01-01T00:00"))
    assert clock.resync() == -30 * 60 * 1000
    assert clock.now_ms() == ms("2026-01-01T00:30")
    small = Clock(ms("2026-01-01T00:30"), system=lambda: ms("2026-01-01T00:30") + 900)
    assert small.resync() == 900 and small.now_ms() == ms("2026-01-01T00:30")  # drift, no step
