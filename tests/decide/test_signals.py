"""Signals, queries and cancel."""

from __future__ import annotations

import pytest

from orbit_actors.decide import ServerLimits
from orbit_actors.errors import (
    ExecutionFinishedError,
    PayloadTooLargeError,
    QueryFailedError,
    SignalPayloadInvalidError,
    UnknownQueryError,
    UnknownSignalError,
)
from tests.conftest import driver

APPROVAL = """
signals:
  approve: {type: object, required: [by], properties: {by: {type: string}, note: {type: string, default: ""}}}
  poke: null
queries:
  stage: 'steps.wait.output == null ? "waiting" : "approved by " + steps.wait.output.by'
  broken: 'input.nope'
steps:
  - {id: ask, task: t}
  - {id: wait, await: approve, timeout: 2d}
output: "${steps.wait.output}"
"""


def test_an_await_takes_a_signal_and_outputs_its_payload_with_defaults() -> None:
    d = driver(APPROVAL)
    d.run_task("ask")
    [received] = d.signal("approve", {"by": "ann"})[:1]
    [delivered] = d.of_type("SignalDelivered")
    assert delivered.signal_seq == received.seq
    assert d.state.output == {"by": "ann", "note": ""}


def test_signals_that_arrive_before_the_step_are_kept_and_taken_in_order() -> None:
    d = driver(APPROVAL.replace("- {id: wait,", "- {id: wait2, await: approve}\n  - {id: wait,"))
    d.signal("approve", {"by": "first"})
    d.signal("approve", {"by": "second"})
    d.run_task("ask")
    assert d.unit("wait2").output["by"] == "first"
    assert d.unit("wait").output["by"] == "second"


def test_an_await_times_out_with_signal_timeout() -> None:
    d = driver(APPROVAL)
    d.run_task("ask")
    d.advance(2 * 86_400_000)
    [failed] = d.of_type("StepFailed")
    assert failed.error.code == "SIGNAL_TIMEOUT"
    assert failed.error.message == "no signal `approve` arrived within 2d"
    assert d.state.status == "failed"


def test_an_unknown_signal_lists_the_declared_ones() -> None:
    d = driver(APPROVAL)
    with pytest.raises(UnknownSignalError) as caught:
        d.signal("aprove", {})
    assert caught.value.message == "wf@1.0.0 has no signal `aprove`; declared: approve, poke"


def test_a_workflow_without_signals_says_so() -> None:
    d = driver("steps: [{id: a, task: t}]")
    with pytest.raises(UnknownSignalError, match=r"^wf@1.0.0 declares no signals$"):
        d.signal("x")


def test_an_invalid_payload_names_the_path() -> None:
    d = driver(APPROVAL)
    with pytest.raises(SignalPayloadInvalidError, match=r"at \$\.by: expected string, got integer"):
        d.signal("approve", {"by": 1})


def test_an_oversized_payload_is_refused_before_validation() -> None:
    d = driver(APPROVAL, limits=ServerLimits(max_payload_bytes=50))
    with pytest.raises(PayloadTooLargeError):
        d.signal("approve", {"by": 1, "pad": "x" * 100})


def test_a_signal_to_a_finished_execution_is_refused() -> None:
    d = driver("signals: {poke: null}\nsteps: [{id: a, value: 1}]")
    with pytest.raises(ExecutionFinishedError, match="^execution is already completed$"):
        d.signal("poke")


def test_a_query_reads_the_current_state_with_unfinished_outputs_null() -> None:
    d = driver(APPROVAL)
    assert d.query("stage") == "waiting"
    d.run_task("ask")
    d.signal("approve", {"by": "ann"})
    assert d.query("stage") == "approved by ann"


def test_a_query_never_writes_history() -> None:
    d = driver(APPROVAL)
    before = len(d.history)
    d.query("stage")
    assert len(d.history) == before


def test_unknown_and_failing_queries() -> None:
    d = driver(APPROVAL)
    with pytest.raises(UnknownQueryError):
        d.query("nope")
    with pytest.raises(QueryFailedError, match="^query `broken` failed: "):
        d.query("broken")


def test_cancel_aborts_and_cancels_units_in_flight() -> None:
    d = driver("steps: [{id: a, task: t}]")
    d.dispatch("a")
    d.cancel("changed my mind")
    assert d.of_type("CancelRequested")[0].reason == "changed my mind"
    assert d.of_type("StepCancelled")[0].reason == "execution cancelled"
    assert d.types()[-1] == "WorkflowCancelled"
    assert d.of_type("WorkflowCancelled")[0].reason == "changed my mind"


def test_cancel_while_aborting_records_nothing() -> None:
    d = driver("""
        steps: [{id: a, task: t, compensate: {task: undo}}, {id: b, task: t, retry: {max_attempts: 1}}]
    """)
    d.run_task("a")
    d.fail(d.dispatch("b"))
    before = len(d.history)
    assert d.cancel() == []
    assert len(d.history) == before


def test_cancel_of_a_finished_execution_is_refused() -> None:
    d = driver("steps: [{id: a, value: 1}]")
    with pytest.raises(ExecutionFinishedError):
        d.cancel()
