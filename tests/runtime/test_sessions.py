"""Worker sessions: registration rules, redelivery after a lost worker, late and duplicate
results, resume, authorization, heartbeats, cancel pushes and credit."""

from __future__ import annotations

import trio
from trio.testing import MockClock

from orbit_actors.runtime import Runtime
from orbit_actors.testing import FakeWorker
from orbit_actors.wire import messages as wire

from .conftest import workflow

ONE = workflow("steps: [{id: a, task: t, input: {n: 1}}, {id: b, task: t2}]\n")


async def started(runtime: Runtime, text: str = ONE, **kwargs: object) -> str:
    await runtime.register_definition(text)
    execution_id, _ = await runtime.start("wf", input={}, **kwargs)  # type: ignore[arg-type]
    return execution_id


async def holding(
    nursery: trio.Nursery,
    runtime: Runtime,
    worker_id: str = "w1",
    contracts: list[tuple[str, str]] | None = None,
) -> tuple[FakeWorker, wire.Task]:
    """A worker that registered, received its first task and does not answer it."""
    worker = FakeWorker(runtime, worker_id, contracts or [("t", "1")], auto=False)
    await nursery.start(worker.serve)
    return worker, await worker.first_task()


async def test_registration_refusals_keep_the_connection(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    sent: list[wire.ServerMessage] = []
    connection = runtime.connect(sent.append)
    await connection.handle(wire.Heartbeat(type="heartbeat", id="h1"))
    await connection.handle(wire.Register(type="register", worker_id="", contracts=[]))
    await connection.handle(wire.Register(type="register", worker_id="w", contracts=[]))
    bad = [wire.Contract(task_name="workflow:x", contract_version="1")]
    await connection.handle(wire.Register(type="register", worker_id="w", contracts=bad))
    builtin = [wire.Contract(task_name="orbit.http.request", contract_version="1")]
    await connection.handle(wire.Register(type="register", worker_id="w", contracts=builtin))
    answers = [(m.code, m.message) for m in sent if isinstance(m, wire.ErrorMessage)]
    assert answers == [
        ("NOT_REGISTERED", "register before sending anything else"),
        ("INVALID_REQUEST", "worker_id is required"),
        ("INVALID_REQUEST", "a worker must announce at least one task contract"),
        ("RESERVED_TASK", "`workflow:x` names a child workflow, not a worker task"),
        ("RESERVED_TASK", "`orbit.http.request` is a built-in task"),
    ]
    ok = [wire.Contract(task_name="t", contract_version="1")]
    await connection.handle(wire.Register(type="register", worker_id="w", contracts=ok))
    assert isinstance(sent[-1], wire.Registered)
    await connection.handle(wire.Register(type="register", worker_id="w", contracts=ok))
    assert isinstance(sent[-1], wire.ErrorMessage) and sent[-1].code == "ALREADY_REGISTERED"


async def test_a_version_warning_lists_the_versions_in_use(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(ONE)
    await runtime.register_definition(
        ONE.replace('t: {version: "1"}', 't: {version: "3"}').replace("1.0.0", "2.0.0")
    )
    worker = FakeWorker(runtime, contracts=[("t", "2"), ("t2", "1")])
    answer = await worker.register()
    assert isinstance(answer, wire.Registered)
    assert answer.warnings == [
        "`t` is announced at version 2 but registered workflows use 1, 3; this worker will not receive those tasks"
    ]


async def test_a_lost_worker_has_its_task_redelivered_with_the_same_attempt_and_key(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    execution_id = await started(runtime)
    async with trio.open_nursery() as nursery:
        lost, first = await holding(nursery, runtime, "w1", [("t", "1")])
        lost.connection.closed()  # the socket drops; no goodbye
        _, again = await holding(nursery, runtime, "w2", [("t", "1"), ("t2", "1")])
        assert (again.attempt, again.idempotency_key, again.redelivery) == (
            1,
            first.idempotency_key,
            True,
        )
        assert again.token != first.token
        history = await runtime.history(execution_id)
        [uncertain] = [e for e in history if e.type == "StepAttemptUncertain"]
        assert uncertain.reason == "worker `w1` stopped responding"
        nursery.cancel_scope.cancel()


async def test_unregister_redelivers_at_once(runtime: Runtime, autojump_clock: MockClock) -> None:
    execution_id = await started(runtime)
    async with trio.open_nursery() as nursery:
        leaving, _ = await holding(nursery, runtime, "w1", [("t", "1")])
        await leaving.connection.handle(wire.Unregister(type="unregister"))
        assert isinstance(leaving.received[-1], wire.Unregistered)
        await trio.testing.wait_all_tasks_blocked()
        history = await runtime.history(execution_id)
        assert [e.reason for e in history if e.type == "StepAttemptUncertain"] == [
            "worker unregistered"
        ]
        nursery.cancel_scope.cancel()


async def test_a_late_result_from_a_previous_session_is_accepted_and_a_second_is_a_duplicate(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    execution_id = await started(runtime)
    async with trio.open_nursery() as nursery:
        old, first = await holding(nursery, runtime, "w1", [("t", "1")])
        old.connection.closed()
        other, second = await holding(nursery, runtime, "w2", [("t", "1")])
        back = FakeWorker(runtime, "w1", [("t", "1")])
        await back.register()
        ack = await back.complete(first.token, {"from": "old session"})
        assert isinstance(ack, wire.Ack) and ack.accepted
        ack = await other.complete(second.token, {"from": "redelivery"})
        assert isinstance(ack, wire.Ack) and (ack.accepted, ack.reason) == (
            False,
            "duplicate result; step already resolved",
        )
        history = await runtime.history(execution_id)
        assert [e.outcome for e in history if e.type == "StaleResultIgnored"] == ["duplicate"]
        nursery.cancel_scope.cancel()


async def test_a_session_resumed_within_the_timeout_keeps_its_tasks(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    execution_id = await started(runtime)
    async with trio.open_nursery() as nursery:
        worker, task = await holding(nursery, runtime, "w1", [("t", "1")])
        session_id = worker.session_id
        worker.connection.closed()
        await trio.sleep(10)
        back = FakeWorker(runtime, "w1", [("t", "1")])
        answer = await back.register(resume=session_id)
        assert (
            isinstance(answer, wire.Registered)
            and answer.resumed
            and answer.worker_session_id == session_id
        )
        ack = await back.complete(task.token, {"ok": 1})
        assert isinstance(ack, wire.Ack) and ack.accepted
        await trio.sleep(60)
        history = await runtime.history(execution_id)
        assert not [e for e in history if e.type == "StepAttemptUncertain"]
        nursery.cancel_scope.cancel()


async def test_a_resumed_session_gets_its_tasks_again_marked_resent_with_the_same_token(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await started(runtime)
    async with trio.open_nursery() as nursery:
        worker, task = await holding(nursery, runtime, "w1", [("t", "1")])
        assert task.resent is False and "resent" not in wire.encode(task)
        worker.connection.closed()
        back = FakeWorker(runtime, "w1", [("t", "1")], auto=False)
        await back.register(resume=worker.session_id)
        (again,) = back.tasks
        assert again.token == task.token and again.idempotency_key == task.idempotency_key
        assert again.resent is True and again.redelivery is False
        assert wire.encode(again)["resent"] is True
        nursery.cancel_scope.cancel()


async def test_resuming_closes_the_connection_still_holding_the_session(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    closed: list[tuple[int, str]] = []
    first = runtime.connect(lambda m: None, lambda code, reason: closed.append((code, reason)))
    ok = [wire.Contract(task_name="t", contract_version="1")]
    await first.handle(wire.Register(type="register", worker_id="w1", contracts=ok))
    session_id = first.session.id if first.session else ""
    sent: list[wire.ServerMessage] = []
    second = runtime.connect(sent.append)
    await second.handle(
        wire.Register(type="register", worker_id="w1", contracts=ok, resume_session_id=session_id)
    )
    assert closed == [(4000, "session resumed elsewhere")]
    assert isinstance(sent[-1], wire.Registered) and sent[-1].resumed


async def test_a_session_that_cannot_be_resumed_starts_anew_with_a_warning(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    worker = FakeWorker(runtime, "w1", [("t", "1")])
    answer = await worker.register(resume="s-unknown")
    assert isinstance(answer, wire.Registered) and not answer.resumed
    assert "cannot be resumed" in answer.warnings[0]


async def test_a_result_for_another_workers_token_is_forbidden(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await started(runtime)
    async with trio.open_nursery() as nursery:
        _, task = await holding(nursery, runtime, "w1", [("t", "1")])
        thief = FakeWorker(runtime, "w2", [("t", "1")])
        await thief.register()
        answer = await thief.complete(task.token, {"stolen": True})
        assert isinstance(answer, wire.ErrorMessage) and answer.code == "FORBIDDEN"
        nursery.cancel_scope.cancel()


async def test_an_unknown_token_is_answered_without_recording(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    worker = FakeWorker(runtime, "w1", [("t", "1")])
    await worker.register()
    answer = await worker.complete("nonsense@nowhere", 1)
    assert isinstance(answer, wire.Ack)
    assert answer.reason == "unknown token (execution finished or token invalid)"


async def test_cancel_pushes_and_heartbeats_list_cancelled_tokens(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    execution_id = await started(runtime)
    async with trio.open_nursery() as nursery:
        worker, task = await holding(nursery, runtime, "w1", [("t", "1")])
        await runtime.cancel(execution_id, "stop")
        pushes = [m for m in worker.received if isinstance(m, wire.Cancel)]
        assert (
            pushes
            and pushes[0].tokens == [task.token]
            and pushes[0].reason == "execution cancelled"
        )
        await worker.connection.handle(wire.Heartbeat(type="heartbeat"))
        ack = worker.received[-1]
        assert isinstance(ack, wire.HeartbeatAck) and ack.cancel == [task.token]
        nursery.cancel_scope.cancel()


async def test_credit_zero_pauses_pushes_and_credit_resumes_them(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    worker = FakeWorker(runtime, "w1", [("t", "1"), ("t2", "1")], concurrency=1)
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        await worker.connection.handle(wire.Credit(type="credit", concurrency=0))
        execution_id = await started(runtime)
        await trio.sleep(1)
        assert worker.tasks == []
        await worker.connection.handle(wire.Credit(type="credit", concurrency=4))
        assert any(isinstance(m, wire.CreditAck) and m.concurrency == 4 for m in worker.received)
        assert (await runtime.wait(execution_id, 60)).status == "completed"
        nursery.cancel_scope.cancel()


async def test_tasks_go_only_to_workers_of_the_tasks_language(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(workflow("steps: [{id: a, task: go}]\n"))
    python = FakeWorker(runtime, "py", [("go", "1")], runtime_name="python")
    golang = FakeWorker(runtime, "gopher", [("go", "1")], runtime_name="Go")
    async with trio.open_nursery() as nursery:
        await nursery.start(python.serve)
        await nursery.start(golang.serve)
        execution_id, _ = await runtime.start("wf")
        assert (await runtime.wait(execution_id, 60)).status == "completed"
        assert python.tasks == [] and len(golang.tasks) == 1
        nursery.cancel_scope.cancel()


async def test_workers_are_listed_with_sessions_and_tasks_in_flight(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await started(runtime)
    async with trio.open_nursery() as nursery:
        await holding(nursery, runtime, "w1", [("t", "1")])
        [listed] = await runtime.workers()
        assert (listed.worker_id, listed.online, listed.sessions, listed.inflight) == (
            "w1",
            True,
            1,
            1,
        )
        nursery.cancel_scope.cancel()


async def test_a_missed_deadline_cancels_the_token_at_the_worker_and_retries(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(
        workflow("steps: [{id: a, task: t, timeout: 30s, retry: {initial_interval: 1s}}]\n")
    )
    worker = FakeWorker(runtime, "w1", [("t", "1")], auto=False)
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        execution_id, _ = await runtime.start("wf")
        first = await worker.first_task()
        assert first.timeout_ms == 30_000 and first.deadline_ms is not None
        await worker.wait_for_tasks(2, within=120)
        cancels = [m for m in worker.received if isinstance(m, wire.Cancel)]
        assert cancels[0].tokens == [first.token] and cancels[0].reason == "attempt timed out"
        second = worker.tasks[1]
        assert second.attempt == 2 and not second.redelivery
        await worker.complete(second.token, {"ok": True})
        assert (await runtime.wait(execution_id, 10)).status == "completed"
        nursery.cancel_scope.cancel()


async def test_a_silent_worker_dies_and_its_task_is_uncertain_once_the_timeout_passed_since_dispatch(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(ONE)
    closed: list[tuple[int, str]] = []
    worker = FakeWorker(runtime, "w1", [("t", "1")], auto=False, heartbeat=False)
    worker.connection.close = lambda code, reason: closed.append((code, reason))
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)  # registered at t=0, then silent
        await trio.sleep(20)
        execution_id, _ = await runtime.start("wf", input={})
        await worker.first_task()  # dispatched at t=20
        await trio.sleep(40)  # the session dies at t=30; the token is uncertain at t=50
        history = await runtime.history(execution_id)
        dispatched = next(e for e in history if e.type == "StepDispatched")
        uncertain = next(e for e in history if e.type == "StepAttemptUncertain")
        assert uncertain.timestamp_ms - dispatched.timestamp_ms == 30_000
        assert closed == [(4001, "session timed out")]
        nursery.cancel_scope.cancel()
