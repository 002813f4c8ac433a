"""Continue-as-new: the next run's input, carried signals, the same execution id."""

from __future__ import annotations

from orbit_actors.decide import child_execution_id
from tests.conftest import driver

LOOP = """
input: {type: object, required: [n], properties: {n: {type: integer}, step: {type: integer, default: 1}}}
signals: {note: null}
steps:
  - {id: work, task: t, input: {n: "${input.n}"}}
  - {id: again, when: input.n > 0, continue_as_new: {n: "${input.n - input.step}"}}
output: {final: "${input.n}"}
"""


def test_continue_as_new_ends_the_run_and_starts_the_next_with_the_template_input() -> None:
    d = driver(LOOP, {"n": 1})
    d.run_task("work")
    [ended] = d.runs[0][-1:]
    assert (
        ended.type == "WorkflowContinuedAsNew"
        and ended.next_run == 2
        and ended.input == {"n": 0, "step": 1}
    )
    created = d.history[0]
    assert created.type == "WorkflowCreated" and created.run == 2 and created.execution_id == "ex-1"
    assert d.scheduled() == []
    d.advance(0)
    assert d.unit("work").idempotency_key == "ex-1/2/work"
    d.run_task("work")
    assert d.state.status == "completed" and d.state.output == {"final": 0}


def test_undelivered_signals_are_carried_to_the_next_run_in_order() -> None:
    d = driver(LOOP, {"n": 1})
    d.signal("note", 1)
    d.signal("note", 2)
    d.run_task("work")
    d.advance(0)
    carried = [e for e in d.history if e.type == "SignalReceived"]
    assert [e.payload for e in carried] == [1, 2]
    assert [e.seq for e in carried] == [3, 4]


def test_an_invalid_next_input_fails_the_step_with_invalid_input() -> None:
    d = driver(LOOP.replace('{n: "${input.n - input.step}"}', '{n: "x"}'), {"n": 1})
    d.run_task("work")
    [failed] = d.of_type("StepFailed")
    assert failed.error.code == "INVALID_INPUT" and not failed.error.retryable
    assert failed.error.message.startswith(
        "the next run's input is invalid at $.n: expected integer"
    )


def test_units_in_flight_are_cancelled_when_the_run_continues() -> None:
    d = driver("""
        steps:
          - {id: slow, task: t, after: []}
          - {id: again, after: [], value: 1}
          - {id: loop, after: [again], continue_as_new: {}}
    """)
    assert [e.step for e in d.runs[0] if e.type == "StepCancelled"] == ["slow"]


def test_a_run_that_continues_at_once_advances_once_per_wake_up() -> None:
    d = driver("steps: [{id: loop, continue_as_new: {}}]")
    assert len(d.runs) == 1 and d.types() == ["WorkflowCreated", "WorkflowStarted"]
    d.advance(0)
    assert len(d.runs) == 2


def test_children_of_later_runs_get_run_scoped_ids() -> None:
    assert child_execution_id("loop-1", 2, "kid") == "loop-1.run2.kid"
