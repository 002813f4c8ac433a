"""Terminate, pause and unpause in the pure core: the events, what they stop, and refusals."""

from __future__ import annotations

import pytest

from orbit_actors.decide.effects import effects_of
from orbit_actors.decide.operate import waits_for_unpause
from orbit_actors.errors import ExecutionFinishedError, NotPausedError
from orbit_actors.testing import Driver
from tests.golden.scenarios import ORDER, load, pipeline


def test_terminate_ends_the_run_at_once_without_compensation_or_handlers() -> None:
    d = load("order_saga.yaml", execution_id="o").start(ORDER)
    d.run_task("charge", {"charge_id": "c"})
    d.terminate("bad order")
    assert d.types()[-1] == "WorkflowTerminated" and d.state.status == "terminated"
    assert d.of_type("WorkflowTerminated")[0].reason == "bad order"
    assert not [k for k in d.state.units if k.startswith(("compensate:", "handler:"))]


def test_terminate_stops_the_attempts_in_flight() -> None:
    d = load("order_saga.yaml", execution_id="o").start(ORDER)
    token = d.dispatch("charge")
    events = d.terminate()
    effects = effects_of(d.state, d.definition, events)
    assert effects.cancel_tokens == {token: "execution terminated"}


def test_terminate_terminates_running_children() -> None:
    customers = [{"id": "c1", "amount": 1.0}]
    d = load("month_end.yaml", execution_id="me").start(
        {"month": "2026-01", "customers": customers}
    )
    d.run_task("close", {})
    d.dispatch("invoices[0]", "orbit-runtime", "child:me.invoices.0")
    effects = effects_of(d.state, d.definition, d.terminate())
    assert effects.terminate_children == {"me.invoices.0": "parent terminated"}


def test_a_finished_execution_cannot_be_terminated() -> None:
    d = load("order_saga.yaml", execution_id="o").start(ORDER)
    d.terminate()
    with pytest.raises(ExecutionFinishedError):
        d.terminate()


def test_a_paused_execution_records_results_but_dispatches_nothing_new() -> None:
    d = Driver(pipeline(), execution_id="p").start({"source": "s"})
    token = d.dispatch("extract")
    d.pause("investigating")
    events = d.record([])  # nothing to do
    assert events == []
    d.complete(token, {"rows": 1})
    assert d.scheduled() == ["transform"]  # recorded as ready, and waits
    assert waits_for_unpause(d.state, d.definition, d.unit("transform"))
    with pytest.raises(AssertionError):
        d.dispatch("transform")


def test_a_unit_scheduled_while_paused_is_not_ready_until_unpaused() -> None:
    d = Driver(pipeline(), execution_id="p").start({"source": "s"})
    token = d.dispatch("extract")
    d.pause()
    d.complete(token, {"rows": 1})
    batch = d.history[-1:]
    assert effects_of(d.state, d.definition, batch).ready == []
    unpaused = d.unpause()
    assert [r.key for r in effects_of(d.state, d.definition, unpaused).ready] == ["transform"]
    assert not waits_for_unpause(d.state, d.definition, d.unit("transform"))


def test_pausing_a_paused_execution_records_nothing() -> None:
    d = Driver(pipeline(), execution_id="p").start({"source": "s"})
    d.pause()
    assert d.pause() == []
    assert d.types().count("ExecutionPaused") == 1


def test_unpausing_an_execution_that_is_not_paused_is_refused() -> None:
    d = Driver(pipeline(), execution_id="p").start({"source": "s"})
    with pytest.raises(NotPausedError) as caught:
        d.unpause()
    assert (caught.value.code, caught.value.status) == ("NOT_PAUSED", 409)


def test_the_run_timeout_keeps_running_while_paused() -> None:
    d = Driver(pipeline(), execution_id="p").start({"source": "s"})
    d.pause()
    d.advance(3_600_000)
    assert d.state.status == "timed_out"
