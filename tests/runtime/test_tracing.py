"""Traces from durable history, exported to the OpenTelemetry SDK's in-memory exporter: one trace
per top-level execution, a span per run and per unit attempt, a child execution under its parent
step's span, nothing exported before it has ended, and the same ids after a restart."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import trio
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from trio.testing import MockClock

from orbit_actors.observe.tracing import Tracer, execution_span_id, trace_id_of
from orbit_actors.runtime import Runtime, open_runtime
from orbit_actors.testing import FakeWorker, MemoryStore
from orbit_actors.testing.fake_worker import TaskFailure
from orbit_actors.wire import messages as wire

from .conftest import workflow
from .test_children_http import CHILD, PARENT

FLAKY = workflow(
    "steps: [{id: a, task: t, retry: {max_attempts: 3, initial_interval: 1s}}]\n", name="flaky"
)
WAITS = workflow(
    "signals: {go: {type: object}}\nsteps: [{id: w, await: go}, {id: a, task: t}]\n",
    name="waits",
)


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
async def traced(
    autojump_clock: MockClock, exporter: InMemorySpanExporter
) -> AsyncIterator[Runtime]:
    tracer = Tracer(SimpleSpanProcessor(exporter))
    async with open_runtime(MemoryStore(), tracer=tracer) as runtime:
        for source in (CHILD, PARENT, FLAKY, WAITS):
            await runtime.register_definition(source)
        yield runtime


def attribute(name: str) -> Callable[[ReadableSpan], int]:
    """A span's integer attribute ``name``."""
    return lambda span: int(str((span.attributes or {})[name]))


def by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    return {f"{(s.attributes or {})['orbit.execution_id']!s} {s.name}": s for s in spans}


async def run_to_end(runtime: Runtime, worker: FakeWorker, workflow: str, execution_id: str) -> str:
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        await runtime.start(workflow, execution_id=execution_id)
        status = (await runtime.wait(execution_id, 60)).status
        nursery.cancel_scope.cancel()
    return status


async def test_a_parent_and_its_children_share_one_trace_nested_under_the_parent_steps(
    traced: Runtime, exporter: InMemorySpanExporter, autojump_clock: MockClock
) -> None:
    assert await run_to_end(traced, FakeWorker(traced, "w1"), "parent", "order-7") == "completed"
    spans = by_name(exporter.get_finished_spans())
    assert len(spans) == 1 + 3 + 3 + 3  # the parent's run, its 3 units, 3 children with 1 task
    assert {s.context.trace_id for s in spans.values()} == {trace_id_of("order-7")}
    parent_run = spans["order-7 workflow parent"]
    assert parent_run.parent is None
    assert parent_run.context.span_id == execution_span_id("order-7", 1)
    for i in range(3):
        unit = spans[f"order-7 step each[{i}]"]
        child = spans[f"order-7.each.{i} workflow kid"]
        task = spans[f"order-7.each.{i} step work"]
        assert unit.parent is not None and unit.parent.span_id == parent_run.context.span_id
        assert child.parent is not None and child.parent.span_id == unit.context.span_id
        assert task.parent is not None and task.parent.span_id == child.context.span_id
        assert unit.start_time <= child.start_time <= child.end_time <= unit.end_time  # type: ignore[operator]
    assert (
        parent_run.attributes is not None and parent_run.attributes["orbit.status"] == "completed"
    )


def failing_first(times: int) -> Callable[[wire.Task], Awaitable[object]]:
    """A task handler that fails ``times`` attempts (``FLAKY``), then answers ``{"ok": true}``."""
    calls = 0

    async def handle(task: wire.Task) -> object:
        nonlocal calls
        calls += 1
        if calls <= times:
            raise TaskFailure("FLAKY", "not yet")
        return {"ok": True}

    return handle


async def test_each_attempt_has_its_own_span_and_a_failed_one_is_an_error(
    traced: Runtime, exporter: InMemorySpanExporter, autojump_clock: MockClock
) -> None:
    worker = FakeWorker(traced, "w1", handler=failing_first(2))
    assert await run_to_end(traced, worker, "flaky", "f-1") == "completed"
    attempts = sorted(
        (s for s in exporter.get_finished_spans() if s.name == "step a"),
        key=attribute("orbit.attempt"),
    )
    assert [attribute("orbit.attempt")(s) for s in attempts] == [1, 2, 3]
    assert [s.status.status_code for s in attempts] == [
        StatusCode.ERROR, StatusCode.ERROR, StatusCode.UNSET,
    ]  # fmt: skip
    assert len({s.context.span_id for s in attempts}) == 3
    assert attempts[0].attributes and attempts[0].attributes["orbit.error.code"] == "FLAKY"
    assert attempts[0].attributes["orbit.worker_id"] == "w1"


async def test_nothing_is_exported_until_what_it_covers_has_ended(
    traced: Runtime, exporter: InMemorySpanExporter, autojump_clock: MockClock
) -> None:
    worker = FakeWorker(traced, "w1")
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        await traced.start("waits", execution_id="w-1")
        await trio.sleep(60)
        assert exporter.get_finished_spans() == ()  # the run and its await are still open
        await traced.signal("w-1", "go", {})
        assert (await traced.wait("w-1", 60)).status == "completed"
        nursery.cancel_scope.cancel()
    names = sorted(s.name for s in exporter.get_finished_spans())
    assert names == ["step a", "step w", "workflow waits"]


async def test_a_run_recovered_by_another_runtime_ends_with_the_same_ids_and_start(
    autojump_clock: MockClock, exporter: InMemorySpanExporter
) -> None:
    store = MemoryStore()
    async with open_runtime(store, tracer=Tracer(SimpleSpanProcessor(exporter))) as first:
        await first.register_definition(WAITS)
        await first.start("waits", execution_id="w-2")
        started = (await first.describe("w-2")).started_at_ms
    await trio.sleep(30)
    async with open_runtime(store, tracer=Tracer(SimpleSpanProcessor(exporter))) as second:
        worker = FakeWorker(second, "w1")
        async with trio.open_nursery() as nursery:
            await nursery.start(worker.serve)
            await second.signal("w-2", "go", {})
            assert (await second.wait("w-2", 60)).status == "completed"
            nursery.cancel_scope.cancel()
    (run,) = [s for s in exporter.get_finished_spans() if s.name == "workflow waits"]
    assert run.context.trace_id == trace_id_of("w-2")
    assert run.context.span_id == execution_span_id("w-2", 1)
    assert started is not None and run.start_time == started * 1_000_000


async def test_the_metrics_and_the_log_see_each_event_once_beside_the_traces(
    traced: Runtime,
    exporter: InMemorySpanExporter,
    autojump_clock: MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # three observers of StepAttemptFailed, StepSucceeded, WorkflowCreated and
    # WorkflowCompleted; the log's level is set after the runtime opened
    with caplog.at_level(logging.INFO, logger="orbit.execution"):
        assert await run_to_end(traced, FakeWorker(traced, "w1", handler=failing_first(1)), "flaky",
                                "f-2") == "completed"  # fmt: skip
    metrics = traced.metrics
    assert metrics.steps.values == {("flaky", "attempt_failed"): 1, ("flaky", "succeeded"): 1}
    assert metrics.started.values == {("flaky",): 1}
    assert metrics.finished.values == {("flaky", "completed"): 1}
    assert sum(metrics.start_to_close.series[("flaky",)][:-1]) == 2
    logged = [r.getMessage() for r in caplog.records if r.name == "orbit.execution"]
    assert logged == ["execution started", "attempt failed", "execution completed"]
    assert sorted(s.name for s in exporter.get_finished_spans()) == [
        "step a", "step a", "workflow flaky",
    ]  # fmt: skip
