"""The Store contract, run against every store."""

from __future__ import annotations

import pytest
import trio

from orbit_actors.errors import InvalidRequestError, StorageError
from orbit_actors.history.events import events_from_json
from orbit_actors.store import AlreadyStored, DefinitionRecord, ScheduleRecord, Store, WorkerRecord
from orbit_actors.store.base import KEPT_CLAIMS, WakeEntry

from .helpers import commit


def definition(version: str = "1.0.0", digest: str = "a" * 64) -> DefinitionRecord:
    return DefinitionRecord("wf", version, digest, '{"workflow": "wf"}', 5)


async def test_a_definition_is_created_then_unchanged_then_in_conflict(store: Store) -> None:
    assert (await store.put_definition(definition())).outcome == "created"
    assert (await store.put_definition(definition())).outcome == "unchanged"
    conflict = await store.put_definition(definition(digest="b" * 64))
    assert conflict.outcome == "conflict" and conflict.record.definition_hash == "a" * 64


async def test_definitions_are_listed_in_registration_order(store: Store) -> None:
    for version in ("2.0.0", "1.0.0", "1.5.0"):
        await store.put_definition(definition(version))
    assert [d.version for d in await store.definitions()] == ["2.0.0", "1.0.0", "1.5.0"]


async def test_committed_events_are_read_back_in_order(store: Store) -> None:
    await store.commit(commit("e1", 1))
    await store.commit(commit("e1", 4, 2))
    history = await store.history("e1")
    assert [e.seq for e in history] == [1, 2, 3, 4, 5]
    row = await store.execution("e1")
    assert row is not None and row.last_seq == 5 and row.status == "running"


async def test_a_commit_that_would_leave_a_seq_gap_is_refused_and_writes_nothing(
    store: Store,
) -> None:
    await store.commit(commit("e1", 1))
    with pytest.raises(StorageError, match="seq"):
        await store.commit(commit("e1", 5))
    with pytest.raises(StorageError):
        await store.commit(commit("e1", 3))
    assert [e.seq for e in await store.history("e1")] == [1, 2, 3]


async def test_a_new_execution_starts_at_seq_1(store: Store) -> None:
    with pytest.raises(StorageError):
        await store.commit(commit("e1", 2))
    assert await store.execution("e1") is None


async def test_a_create_commit_for_a_taken_id_is_refused_without_disturbing_its_batch(
    store: Store,
) -> None:
    await store.commit(commit("e1", 1, status="completed"))
    taken = commit("e1", 1)
    taken.create = True
    fresh = commit("e2", 1)
    fresh.create = True
    refused: list[BaseException] = []

    async def create_taken() -> None:
        try:
            await store.commit(taken)
        except AlreadyStored as exc:
            refused.append(exc)

    async with trio.open_nursery() as nursery:  # both in one batch where the store groups them
        nursery.start_soon(create_taken)
        nursery.start_soon(store.commit, fresh)
    assert len(refused) == 1 and "e1" in str(refused[0])
    assert [e.seq for e in await store.history("e1")] == [1, 2, 3]
    e1 = await store.execution("e1")
    assert e1 is not None and e1.status == "completed"
    assert [e.seq for e in await store.history("e2")] == [1, 2, 3]


async def test_a_commit_out_of_sequence_is_refused_without_disturbing_its_batch(
    store: Store,
) -> None:
    await store.commit(commit("e1", 1))
    refused: list[BaseException] = []

    async def commit_stale() -> None:
        try:
            await store.commit(commit("e1", 2))  # e1 is at seq 3 already
        except StorageError as exc:
            refused.append(exc)

    async with trio.open_nursery() as nursery:  # both in one batch where the store groups them
        nursery.start_soon(commit_stale)
        nursery.start_soon(store.commit, commit("e2", 1))
        nursery.start_soon(store.commit, commit("e1", 4))
    assert len(refused) == 1 and "`e1` has seq" in str(refused[0])
    assert [e.seq for e in await store.history("e1")] == [1, 2, 3, 4, 5, 6]
    assert [e.seq for e in await store.history("e2")] == [1, 2, 3]


async def test_the_summary_row_follows_the_status(store: Store) -> None:
    await store.commit(commit("e1", 1))
    await store.commit(commit("e1", 4, 1, status="completed"))
    row = await store.execution("e1")
    assert row is not None and row.status == "completed" and row.closed_at_ms == 2000
    assert await store.running_ids() == []


async def test_rollover_archives_the_run_and_starts_the_next_at_seq_1(store: Store) -> None:
    await store.commit(commit("e1", 1, 4))
    await store.commit(commit("e1", 1, 2, run=2, rollover=True))
    assert [e.seq for e in await store.history("e1")] == [1, 2]
    assert [e.seq for e in await store.history("e1", 1)] == [1, 2, 3, 4]
    assert [e.seq for e in await store.history("e1", 2)] == [1, 2]
    assert await store.history("e1", 3) == []
    row = await store.execution("e1")
    assert row is not None and (row.run, row.last_seq) == (2, 2)


async def test_a_rollover_must_follow_the_current_run(store: Store) -> None:
    await store.commit(commit("e1", 1))
    with pytest.raises(StorageError):
        await store.commit(commit("e1", 1, run=3, rollover=True))
    with pytest.raises(StorageError):
        await store.commit(commit("e1", 4, run=2))


async def test_running_ids_are_the_non_terminal_executions(store: Store) -> None:
    await store.commit(commit("a", 1))
    await store.commit(commit("b", 1, status="failed"))
    await store.commit(commit("c", 1))
    assert await store.running_ids() == ["a", "c"]


async def test_the_wake_index_holds_each_running_execution_as_last_committed(
    store: Store,
) -> None:
    await store.commit(commit("a", 1, wake_at_ms=5_000, busy=False))
    await store.commit(commit("b", 1, status="failed"))
    await store.commit(commit("c", 1, parent_id="a"))
    await store.commit(commit("a", 4, wake_at_ms=None, busy=True))
    assert await store.wake_index() == [
        WakeEntry("a", None, busy=True, root=True),
        WakeEntry("c", None, busy=True, root=False),
    ]
    await store.commit(commit("a", 7, wake_at_ms=9_000, busy=False))
    assert (await store.wake_index())[0] == WakeEntry("a", 9_000, busy=False, root=True)


async def test_the_wake_index_due_by_a_time_holds_the_busy_and_those_due_by_then(
    store: Store,
) -> None:
    await store.commit(commit("a", 1, wake_at_ms=5_000, busy=False))
    await store.commit(commit("b", 1, wake_at_ms=90_000, busy=False))
    await store.commit(commit("c", 1, wake_at_ms=None, busy=True))
    await store.commit(commit("d", 1, wake_at_ms=None, busy=False))
    await store.commit(commit("e", 1, wake_at_ms=1_000, busy=False, status="failed"))
    assert [e.execution_id for e in await store.wake_index(due_by_ms=5_000)] == ["a", "c"]


async def test_the_wake_index_is_read_a_page_at_a_time_to_its_end(store: Store) -> None:
    for n in range(7):
        await store.commit(commit(f"x{n}", 1, status="failed" if n == 3 else "running"))
    seen: list[str] = []
    after = 0
    while True:
        page, after = await store.wake_index_page(after, 2)
        if not page:
            break
        assert len(page) <= 2
        seen += [entry.execution_id for entry in page]
    assert seen == ["x0", "x1", "x2", "x4", "x5", "x6"]
    assert await store.wake_index_page(after, 2) == ([], after)


async def test_histories_are_read_together(store: Store) -> None:
    await store.commit(commit("a", 1, count=2))
    await store.commit(commit("b", 1, count=3))
    found = await store.histories(["a", "b", "nobody"])
    assert {i: [e.seq for e in events] for i, events in found.items()} == {
        "a": [1, 2],
        "b": [1, 2, 3],
    }
    assert found["a"] == await store.history("a")


async def test_history_segments_are_the_histories_undecoded(store: Store) -> None:
    await store.commit(commit("a", 1, count=2))
    await store.commit(commit("a", 3, count=2))
    segments = await store.history_segments(["a", "nobody"])
    assert list(segments) == ["a"]
    decoded = [event for segment in segments["a"] for event in events_from_json(segment)]
    assert decoded == await store.history("a")


async def test_history_segments_of_many_executions_are_each_current_run_in_order(
    store: Store,
) -> None:
    ids = [f"e{index}" for index in range(620)]  # more than one statement's worth of ids
    for execution_id in ids:
        await store.commit(commit(execution_id, 1, count=1))
    await store.commit(commit("e7", 2, count=2))
    await store.commit(commit("e7", 4, count=1))
    await store.commit(commit("e9", 2, count=1))
    await store.commit(commit("e9", 1, 2, run=2, rollover=True))
    segments = await store.history_segments([*reversed(ids), "nobody"])
    assert set(segments) == set(ids)
    for execution_id in ("e0", "e7", "e9", "e619"):
        decoded = [e for segment in segments[execution_id] for e in events_from_json(segment)]
        assert decoded == await store.history(execution_id)


async def test_executions_are_listed_newest_first_with_filters_and_cursor(store: Store) -> None:
    for index in range(7):
        await store.commit(
            commit(
                f"e{index}",
                1,
                1,
                status="running" if index % 2 else "completed",
                workflow="w" if index < 5 else "v",
            )
        )
    page = await store.list_executions(limit=3)
    assert [r.execution_id for r in page.executions] == ["e6", "e5", "e4"]
    assert page.next_cursor is not None
    rest = await store.list_executions(limit=3, cursor=page.next_cursor)
    assert [r.execution_id for r in rest.executions] == ["e3", "e2", "e1"]
    last = await store.list_executions(limit=3, cursor=rest.next_cursor)
    assert [r.execution_id for r in last.executions] == ["e0"] and last.next_cursor is None
    running = await store.list_executions(status="running", workflow="w")
    assert [r.execution_id for r in running.executions] == ["e3", "e1"]


async def test_an_update_keeps_an_executions_place_in_the_list(store: Store) -> None:
    await store.commit(commit("old", 1))
    await store.commit(commit("new", 1))
    await store.commit(commit("old", 4))
    page = await store.list_executions()
    assert [r.execution_id for r in page.executions] == ["new", "old"]


async def test_limits_are_clamped_not_refused(store: Store) -> None:
    for index in range(3):
        await store.commit(commit(f"e{index}", 1, 1))
    assert len((await store.list_executions(limit=0)).executions) == 1
    assert len((await store.list_executions(limit=5000)).executions) == 3


async def test_a_malformed_cursor_is_an_invalid_request(store: Store) -> None:
    with pytest.raises(InvalidRequestError, match="cursor"):
        await store.list_executions(cursor="%%%")


async def test_counts_by_status(store: Store) -> None:
    await store.commit(commit("a", 1))
    await store.commit(commit("b", 1, status="failed"))
    await store.commit(commit("c", 1, status="failed"))
    assert await store.count_by_status() == {"running": 1, "failed": 2}


async def test_workers_keep_their_first_registration_time(store: Store) -> None:
    await store.upsert_worker(
        WorkerRecord("w1", "python", "sdk/1", [{"task_name": "t", "contract_version": "1"}], 10, 10)
    )
    await store.upsert_worker(WorkerRecord("w1", "python", "sdk/2", [], 50, 50))
    [worker] = await store.workers()
    assert (worker.registered_at_ms, worker.last_seen_ms, worker.sdk, worker.contracts) == (
        10,
        50,
        "sdk/2",
        [],
    )


async def test_touching_a_worker_writes_at_most_once_a_second(store: Store) -> None:
    await store.upsert_worker(WorkerRecord("w1", "python", "sdk", [], 0, 0))
    before = store.statistics().commits
    for now in (100, 500, 999, 1000, 1500, 2100):
        await store.touch_worker("w1", now)
    assert (await store.workers())[0].last_seen_ms == 2100
    await store.commit(commit("a", 1))  # written in order: the touches are written before it
    assert store.statistics().commits - before == 2 + 1


async def test_schedules_are_created_once_and_paused(store: Store) -> None:
    spec = {"cron": "@hourly", "workflow": "wf"}
    assert await store.put_schedule(ScheduleRecord("s1", spec, False, 1)) == "created"
    assert await store.put_schedule(ScheduleRecord("s1", spec, False, 2)) == "unchanged"
    assert (
        await store.put_schedule(ScheduleRecord("s1", {**spec, "cron": "@daily"}, False, 3))
        == "conflict"
    )
    assert await store.set_schedule_paused("s1", True, 50)
    found = await store.schedule("s1")
    assert found is not None and found.paused and found.spec == spec
    assert [s.schedule_id for s in await store.schedules()] == ["s1"]
    assert await store.delete_schedule("s1") and not await store.delete_schedule("s1")
    assert await store.schedule("s1") is None


async def test_an_occurrence_is_claimed_once(store: Store) -> None:
    results = []

    async def claim(owner: str) -> None:
        results.append(await store.claim_occurrence("s1", 60_000, owner, 1))

    async with trio.open_nursery() as nursery:
        for owner in ("a", "b", "c"):
            nursery.start_soon(claim, owner)
    assert sorted(results) == [False, False, True]


async def test_claims_of_a_dead_process_that_never_fired_are_released(store: Store) -> None:
    await store.claim_occurrence("s1", 1, "dead", 1)
    await store.claim_occurrence("s1", 2, "dead", 1)
    await store.put_schedule(ScheduleRecord("s1", {"cron": "@hourly"}, False, 0))
    await store.settle_occurrence("s1", 2, "s1:run", None)
    await store.claim_occurrence("s1", 3, "me", 1)
    assert await store.release_claims(except_owner="me") == 1
    assert await store.claim_occurrence("s1", 1, "me", 2)
    assert not await store.claim_occurrence("s1", 2, "me", 2)


async def test_settling_occurrences_records_executions_errors_and_the_settled_instant(
    store: Store,
) -> None:
    await store.put_schedule(ScheduleRecord("s1", {"cron": "@hourly"}, False, 0))
    for occurrence in (100, 200, 300):
        await store.claim_occurrence("s1", occurrence, "me", occurrence)
    await store.settle_occurrence("s1", 100, "s1:a", None)
    await store.settle_occurrence("s1", 300, None, "3 executions are already running")
    await store.settle_occurrence("s1", 200, "s1:b", None)
    found = await store.schedule("s1")
    assert found is not None
    assert (found.settled_ms, found.last_error) == (300, None)
    assert await store.occurrence_executions(10, "s1") == {"s1": ["s1:b", "s1:a"]}
    assert await store.occurrence_executions(1) == {"s1": ["s1:b"]}
    assert await store.claim_occurrence("s1", 300, "me", 301)  # what did not start is given back


async def test_the_latest_executions_of_every_schedule_come_in_one_read(store: Store) -> None:
    for schedule_id in ("s1", "s2", "s3"):
        await store.put_schedule(ScheduleRecord(schedule_id, {"cron": "@hourly"}, False, 0))
    for schedule_id, occurrences in (("s1", (1, 2, 3)), ("s2", (5,))):
        for occurrence in occurrences:
            await store.claim_occurrence(schedule_id, occurrence, "me", occurrence)
            await store.settle_occurrence(
                schedule_id, occurrence, f"{schedule_id}:{occurrence}", None
            )
    assert await store.occurrence_executions(2) == {"s1": ["s1:3", "s1:2"], "s2": ["s2:5"]}
    assert await store.occurrence_executions(5, "s2") == {"s2": ["s2:5"]}
    assert await store.occurrence_executions(5, "s3") == {}


async def test_only_the_newest_fired_claims_are_kept(store: Store) -> None:
    await store.put_schedule(ScheduleRecord("s1", {"cron": "* * * * *"}, False, 0))
    occurrences = range(1, KEPT_CLAIMS + 6)
    for occurrence in occurrences:
        await store.claim_occurrence("s1", occurrence, "me", occurrence)
        await store.settle_occurrence("s1", occurrence, f"s1:{occurrence}", None)
    kept = (await store.occurrence_executions(10 * KEPT_CLAIMS))["s1"]
    assert kept == [f"s1:{n}" for n in reversed(occurrences)][:KEPT_CLAIMS]
    assert not await store.claim_occurrence("s1", occurrences[-KEPT_CLAIMS], "other", 0)
    assert await store.claim_occurrence("s1", 1, "other", 0)  # settled long ago, let go


async def test_resuming_a_schedule_settles_what_passed_while_paused(store: Store) -> None:
    await store.put_schedule(ScheduleRecord("s1", {"cron": "@hourly"}, False, 0))
    await store.set_schedule_paused("s1", True, 1_000)
    paused = await store.schedule("s1")
    assert paused is not None and paused.settled_ms == 0
    await store.set_schedule_paused("s1", False, 5_000)
    resumed = await store.schedule("s1")
    assert resumed is not None and (resumed.paused, resumed.settled_ms) == (False, 5_000)


async def test_concurrent_committers_keep_each_executions_order(store: Store) -> None:
    async def committer(execution_id: str) -> None:
        for first in range(1, 31, 3):
            await store.commit(commit(execution_id, first))

    async with trio.open_nursery() as nursery:
        for index in range(20):
            nursery.start_soon(committer, f"e{index}")
    for index in range(20):
        history = await store.history(f"e{index}")
        assert [e.seq for e in history] == list(range(1, 31))
        assert [e.payload["n"] for e in history] == list(range(1, 31))  # type: ignore[union-attr]
