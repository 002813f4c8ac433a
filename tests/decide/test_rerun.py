"""Rerun from a step, in the pure core: what is reused, what runs again, and every refusal."""

from __future__ import annotations

import pytest

from orbit_actors.errors import (
    ExecutionRunningError,
    FromStepRequiredError,
    RunCompensatedError,
    UnknownStepError,
)
from orbit_actors.history.events import StepReused, WorkflowCreated
from orbit_actors.ir import compile_source
from orbit_actors.testing import Driver
from tests.golden.scenarios import ORDER, load, order_saga_compensates, pipeline

PARALLEL = """
workflow: parallel
version: 1.0.0
tasks: {t: {version: "1"}}
steps:
  - {id: a, task: t}
  - {id: b, task: t, after: []}
  - {id: c, task: t, after: [b]}
  - id: d
    task: t
    after: []
    input: {x: "${steps.a.output}"}
"""


def failed_pipeline() -> Driver:
    d = Driver(pipeline(), execution_id="etl").start({"source": "s"})
    d.run_task("extract", {"rows": 1})
    d.fail(d.dispatch("transform"), "BAD", "bad", retryable=False)
    return d


def test_a_rerun_reuses_what_succeeded_before_the_failed_step() -> None:
    plan = failed_pipeline().plan_rerun()
    assert (plan.from_step, plan.reused, plan.rerun) == (
        "transform",
        ["extract"],
        ["transform", "load"],
    )


def test_a_reused_step_is_recorded_with_its_output_and_never_dispatched() -> None:
    d = failed_pipeline()
    d.rerun()
    reused = d.of_type("StepReused")
    assert reused == [
        StepReused(seq=3, timestamp_ms=d.now, step="extract", output={"rows": 1}, from_run=1)
    ]
    assert "extract" not in d.scheduled()
    assert d.scheduled() == ["transform"]


def test_the_rerun_opens_with_created_naming_the_run_it_repeats() -> None:
    d = failed_pipeline()
    d.rerun()
    created = d.history[0]
    assert isinstance(created, WorkflowCreated)
    assert created.run == 2 and created.rerun_of is not None
    assert (created.rerun_of.run, created.rerun_of.from_step) == (1, "transform")


def test_steps_that_run_again_get_new_idempotency_keys() -> None:
    d = failed_pipeline()
    first = d.unit("transform").idempotency_key
    d.rerun()
    assert d.unit("transform").idempotency_key == "etl/2/transform" != first


def test_a_step_reading_an_output_depends_on_it_even_without_order() -> None:
    d = Driver(compile_source(PARALLEL), execution_id="p").start({})
    for key in ("a", "b", "c", "d"):
        d.run_task(key, {"v": key})
    plan = d.plan_rerun("a")
    assert plan.rerun == ["a", "d"] and plan.reused == ["b", "c"]


def test_a_step_after_another_in_order_depends_on_it() -> None:
    d = Driver(compile_source(PARALLEL), execution_id="p").start({})
    for key in ("a", "b", "c", "d"):
        d.run_task(key, {"v": key})
    assert d.plan_rerun("b").rerun == ["b", "c"]


def test_a_reused_step_is_reused_again_from_the_run_that_made_it() -> None:
    d = failed_pipeline()
    d.rerun()
    d.fail(d.dispatch("transform"), "BAD", "bad again", retryable=False)
    d.rerun()
    assert d.of_type("StepReused")[0].from_run == 1


def test_a_running_execution_is_refused() -> None:
    d = Driver(pipeline(), execution_id="etl").start({"source": "s"})
    with pytest.raises(
        ExecutionRunningError, match="execution `etl` is running; cancel or terminate it first"
    ):
        d.plan_rerun()


def test_an_unknown_step_is_refused_naming_the_steps() -> None:
    with pytest.raises(UnknownStepError) as caught:
        failed_pipeline().plan_rerun("transfrom")
    assert (
        caught.value.message
        == "pipeline@1.0.0 has no step `transfrom`; steps: extract, transform, load"
    )
    assert (caught.value.code, caught.value.status) == ("UNKNOWN_STEP", 400)


def test_a_completed_execution_needs_a_from_step() -> None:
    d = Driver(pipeline(), execution_id="etl").start({"source": "s"})
    for key in ("extract", "transform", "load"):
        d.run_task(key, {"rows": 1, "count": 1})
    with pytest.raises(
        FromStepRequiredError, match="execution `etl` completed; say which step to rerun from"
    ):
        d.plan_rerun()
    assert d.plan_rerun("load").reused == ["extract", "transform"]


def test_a_compensated_run_is_refused_from_a_later_step() -> None:
    d = order_saga_compensates()
    with pytest.raises(RunCompensatedError) as caught:
        d.plan_rerun()  # from ship: charge and reserve would be reused
    assert caught.value.message == "run 1 compensated charge; rerun from charge or a step before it"
    assert caught.value.status == 409
    assert d.plan_rerun("charge").reused == []


def test_a_failed_child_step_starts_children_under_the_new_run() -> None:
    customers = [{"id": "c1", "amount": 1.0}]
    d = load("month_end.yaml", execution_id="me").start(
        {"month": "2026-01", "customers": customers}
    )
    d.run_task("close", {})
    d.cancel("stop")
    plan = d.plan_rerun()
    assert plan.reused == ["close"] and plan.rerun == ["invoices"]


def test_new_input_is_validated_like_a_start() -> None:
    from orbit_actors.errors import InvalidInputError

    d = failed_pipeline()
    with pytest.raises(InvalidInputError):
        d.rerun(input={"source": 5})
    assert d.state.run == 1  # nothing happened


def test_order_saga_input_is_kept_when_none_is_given() -> None:
    d = load("order_saga.yaml", execution_id="o").start(ORDER)
    d.run_task("charge", {"charge_id": "c"})
    d.terminate("ops")
    d.rerun()
    assert d.state.input == ORDER and d.of_type("StepReused")[0].step == "charge"
