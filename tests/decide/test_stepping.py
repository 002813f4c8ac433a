"""Replay, step by step: the state after any event of a run, and what the decider decides after
it; a seq outside the run is refused saying which seqs the run has."""

from __future__ import annotations

import pytest

from orbit_actors.decide.stepping import check_seq, replay_point
from orbit_actors.errors import SeqOutOfRangeError
from orbit_actors.testing import Driver
from tests.conftest import definition

BODY = """
signals:
  approve: {type: object, properties: {by: {type: string}}}
steps:
  - {id: charge, task: t, input: {amount: "${input.n}"}}
  - {id: wait, await: approve, timeout: 2d}
"""


def run_waiting() -> tuple[Driver, int]:
    d = Driver(definition(BODY)).start({"n": 5})
    d.run_task("charge", {"ok": True})
    succeeded = next(e.seq for e in d.history if e.type == "StepSucceeded")
    return d, succeeded


def test_the_point_after_a_result_shows_the_output_and_the_decisions_it_led_to() -> None:
    d, succeeded = run_waiting()
    point = replay_point(d.history, succeeded)
    assert point.event.type == "StepSucceeded" and point.last_seq == len(d.history)
    assert point.state["outputs"] == {"charge": {"ok": True}}
    assert point.state["units"]["charge"] == {"status": "succeeded", "attempt": 1}
    assert [e.type for e in point.decided] == ["StepScheduled", "TimerStarted"]


def test_the_last_point_of_a_waiting_run_decides_nothing_and_shows_its_timer() -> None:
    d, _ = run_waiting()
    point = replay_point(d.history, len(d.history))
    assert point.decided == []
    assert point.state["steps"] == {"charge": "succeeded", "wait": "running"}
    [timer] = point.state["timers"]
    assert timer["unit"] == "wait" and timer["kind"] == "timer"


def test_a_signal_not_yet_taken_is_pending_at_the_point_it_arrived() -> None:
    d = Driver(definition(BODY)).start({"n": 5})
    d.dispatch("charge")
    [received] = d.signal("approve", {"by": "ann"})
    point = replay_point(d.history, received.seq)
    assert point.state["pending_signals"] == [
        {"seq": received.seq, "name": "approve", "payload": {"by": "ann"}}
    ]


def test_the_point_before_any_decision_is_the_first_event() -> None:
    d, _ = run_waiting()
    point = replay_point(d.history, 1)
    assert point.event.type == "WorkflowCreated" and point.decided == []


@pytest.mark.parametrize("at", [0, 99])
def test_a_seq_outside_the_run_is_refused_with_the_runs_range(at: int) -> None:
    d, _ = run_waiting()
    with pytest.raises(SeqOutOfRangeError, match=f"^run 2 has events 1 to {len(d.history)}$"):
        check_seq(2, d.history, at)


def test_a_candidate_decides_from_the_point_on_by_its_own_rules() -> None:
    d, succeeded = run_waiting()
    candidate = definition(
        BODY.replace("  - {id: wait", "  - {id: note, value: noted}\n  - {id: wait")
    )
    point = replay_point(d.history, succeeded, candidate)
    assert [e.type for e in point.decided][:2] == ["StepScheduled", "StepSucceeded"]
    assert getattr(point.decided[0], "step", None) == "note"


def test_the_output_of_a_value_step_is_a_decision_of_the_decider() -> None:
    d = Driver(definition("steps:\n  - {id: v, value: 1}\n  - {id: t1, task: t}\n")).start({})
    point = replay_point(d.history, 2)
    assert [e.type for e in point.decided] == ["StepScheduled", "StepSucceeded", "StepScheduled"]
