"""Executions through the runtime: start, signal, query, cancel, describe, history, wait, limits,
continue-as-new — and 10,000 at once."""

from __future__ import annotations

import pytest
import trio
from trio.testing import MockClock

from orbit_actors.decide import ServerLimits
from orbit_actors.errors import (
    ExecutionExistsError,
    ExecutionFinishedError,
    ExecutionNotFoundError,
    InvalidExecutionIdError,
    InvalidInputError,
    PayloadTooLargeError,
    ResourceExhaustedError,
    RunNotFoundError,
    UnknownSignalError,
    WaitTimeoutError,
    WorkflowNotFoundError,
)
from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.testing import FakeWorker, MemoryStore

from .conftest import workflow

APPROVAL = workflow("""
input: {type: object, properties: {amount: {type: number}}}
signals: {approve: {type: object, required: [by], properties: {by: {type: string}}}}
queries: {stage: 'steps.wait.output == null ? "waiting" : "approved"'}
steps:
  - {id: wait, await: approve}
output: "${steps.wait.output}"
""")


async def test_start_signal_query_and_complete(runtime: Runtime, autojump_clock: MockClock) -> None:
    await runtime.register_definition(APPROVAL)
    execution_id, created = await runtime.start("wf", input={"amount": 3}, execution_id="req-1")
    assert (execution_id, created) == ("req-1", True)
    assert await runtime.query("req-1", "stage") == "waiting"
    seq = await runtime.signal("req-1", "approve", {"by": "ann"})
    assert seq == 4
    row = await runtime.wait("req-1", 10)
    assert row.status == "completed"
    assert await runtime.query("req-1", "stage") == "approved"  # a finished execution still answers
    detail = await runtime.describe("req-1")
    assert detail.output == {"by": "ann"} and detail.status == "completed"


async def test_start_refusals(runtime: Runtime, autojump_clock: MockClock) -> None:
    await runtime.register_definition(APPROVAL)
    with pytest.raises(WorkflowNotFoundError, match=r"^workflow wf@9.9.9 is not registered$"):
        await runtime.start("wf", version="9.9.9")
    with pytest.raises(InvalidInputError, match=r"^workflow input is invalid at \$\.amount: "):
        await runtime.start("wf", input={"amount": "x"})
    with pytest.raises(InvalidExecutionIdError):
        await runtime.start("wf", execution_id="no spaces")
    await runtime.start("wf", execution_id="same")
    assert await runtime.start("wf", execution_id="same") == ("same", False)
    await runtime.register_definition(APPROVAL.replace("workflow: wf", "workflow: other"))
    with pytest.raises(
        ExecutionExistsError, match="^execution `same` already exists for a different workflow"
    ):
        await runtime.start("other", execution_id="same")


async def test_concurrent_starts_of_one_id_create_it_once(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(APPROVAL)
    answers: list[tuple[str, bool]] = []

    async def start() -> None:
        answers.append(await runtime.start("wf", execution_id="twice"))

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(start)
    assert sorted(answers) == [("twice", False), ("twice", False), ("twice", True)]


async def test_the_latest_version_is_the_highest_by_semver_not_the_newest(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    for version in ("1.10.0", "1.9.0", "2.0.0-rc.1"):
        await runtime.register_definition(APPROVAL.replace("1.0.0", version, 1))
    execution_id, _ = await runtime.start("wf")
    assert (await runtime.describe(execution_id)).version == "1.10.0"


async def test_signal_refusals_in_the_specs_order(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(APPROVAL)
    with pytest.raises(ExecutionNotFoundError, match="^execution not found$"):
        await runtime.signal("nope", "approve", {})
    await runtime.start("wf", execution_id="e")
    with pytest.raises(UnknownSignalError):
        await runtime.signal("e", "aprove", {})
    await runtime.signal("e", "approve", {"by": "x"})
    await runtime.wait("e", 5)
    with pytest.raises(ExecutionFinishedError, match="^execution is already completed$"):
        await runtime.signal("e", "aprove", {})


async def test_cancel_answers_the_detail_and_a_second_cancel_is_refused(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(APPROVAL)
    await runtime.start("wf", execution_id="e")
    detail = await runtime.cancel("e", "no longer needed")
    assert detail.status == "cancelled"
    with pytest.raises(ExecutionFinishedError, match="cancelled"):
        await runtime.cancel("e")


async def test_wait_times_out(runtime: Runtime, autojump_clock: MockClock) -> None:
    await runtime.register_definition(APPROVAL)
    await runtime.start("wf", execution_id="e")
    with pytest.raises(WaitTimeoutError):
        await runtime.wait("e", 30)


async def test_waiting_on_an_unknown_or_finished_execution_keeps_no_waiter(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(APPROVAL)
    await runtime.start("wf", execution_id="e")
    await runtime.cancel("e")
    assert (await runtime.wait("e", 1)).status == "cancelled"
    with pytest.raises(ExecutionNotFoundError):
        await runtime.wait("nobody", 1)
    assert runtime.waiters.pending == {}


async def test_the_active_limit_counts_only_executions_without_a_parent(
    autojump_clock: MockClock,
) -> None:
    config = RuntimeConfig(max_active_executions=2)
    async with open_runtime(MemoryStore(), config) as runtime:
        await runtime.register_definition(APPROVAL)
        await runtime.start("wf", execution_id="a")
        await runtime.start("wf", execution_id="b")
        assert await runtime.start("wf", execution_id="a") == (
            "a",
            False,
        )  # checked before the limit
        with pytest.raises(
            ResourceExhaustedError,
            match=r"^2 executions are already running \(--max-active-executions\)$",
        ):
            await runtime.start("wf", execution_id="c")
        await runtime.cancel("a")
        await runtime.start("wf", execution_id="c")


async def test_an_oversized_input_is_refused_and_nothing_recorded(
    autojump_clock: MockClock,
) -> None:
    async with open_runtime(
        MemoryStore(), RuntimeConfig(limits=ServerLimits(max_payload_bytes=100))
    ) as runtime:
        await runtime.register_definition(APPROVAL)
        with pytest.raises(PayloadTooLargeError):
            await runtime.start("wf", input={"amount": 1, "pad": "x" * 200}, execution_id="big")
        with pytest.raises(ExecutionNotFoundError):
            await runtime.describe("big")


async def test_history_by_run_after_continue_as_new(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(
        workflow("""
input: {type: object, properties: {n: {type: integer}}}
steps:
  - {id: nap, sleep: 1s}
  - {id: again, when: input.n > 0, continue_as_new: {n: "${input.n - 1}"}}
output: {n: "${input.n}"}
""")
    )
    await runtime.start("wf", input={"n": 2}, execution_id="loop")
    row = await runtime.wait("loop", 60)
    assert (row.status, row.run) == ("completed", 3)
    first = await runtime.history("loop", 1)
    assert first[-1].type == "WorkflowContinuedAsNew"
    assert (await runtime.history("loop"))[0].run == 3  # type: ignore[union-attr]
    with pytest.raises(
        RunNotFoundError, match=r"^execution `loop` has runs 1 to 3; there is no run 7$"
    ):
        await runtime.history("loop", 7)


async def test_ten_thousand_concurrent_executions_all_finish(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(
        workflow(
            "steps: [{id: a, task: t, input: {i: '${input.i}'}}, {id: b, task: t2}]\noutput: {i: '${steps.a.output.i}'}\n"
        )
    )
    worker = FakeWorker(runtime, "w1", [("t", "1"), ("t2", "1")], concurrency=500)
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        for i in range(10_000):
            await runtime.start("wf", input={"i": i}, execution_id=f"e{i}")
        for i in range(10_000):
            assert (await runtime.wait(f"e{i}", 600)).status == "completed"
        assert await runtime.store.count_by_status() == {"completed": 10_000}
        assert (await runtime.describe("e4321")).output == {"i": 4321}
        nursery.cancel_scope.cancel()
