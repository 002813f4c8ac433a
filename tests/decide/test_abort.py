"""Abort: cancel in flight, compensate in reverse completion order, handlers, terminal event."""

from __future__ import annotations

from orbit_actors.decide import ServerLimits
from orbit_actors.testing import Driver
from tests.conftest import driver

SAGA = """
steps:
  - {id: a, task: t, after: [], compensate: {task: undo, input: {of: "${steps.a.output}"}}}
  - {id: b, task: t, after: [], compensate: {task: undo, input: {of: "${steps.b.output}"}}}
  - {id: c, task: t, after: [], retry: {max_attempts: 1}}
  - {id: d, task: t, after: [a, b, c]}
on_failure:
  - {id: alert, task: t2, input: {code: "${error.code}", msg: "${error.message}"}}
"""


def failed_saga() -> Driver:
    d = driver(SAGA)
    d.run_task("b", "B")
    d.run_task("a", "A")
    d.fail(d.dispatch("c"), "BROKEN", "c broke")
    return d


def test_compensations_run_one_at_a_time_newest_completion_first() -> None:
    d = failed_saga()
    assert d.scheduled() == ["compensate:a"]
    assert d.unit("compensate:a").input == {"of": "A"}
    d.run_task("compensate:a")
    assert d.scheduled() == ["compensate:b"]


def test_handlers_run_after_compensation_with_the_error_in_scope() -> None:
    d = failed_saga()
    d.run_task("compensate:a")
    d.run_task("compensate:b")
    assert d.scheduled() == ["handler:alert"]
    assert d.unit("handler:alert").input == {"code": "BROKEN", "msg": "c broke"}
    d.run_task("handler:alert")
    [final] = d.of_type("WorkflowFailed")
    assert final.error.code == "BROKEN" and final.compensation == "completed"


def test_a_compensation_that_fails_for_good_is_recorded_and_the_others_still_run() -> None:
    d = failed_saga()
    d.fail(d.dispatch("compensate:a"), retryable=False)
    assert d.scheduled() == ["compensate:b"]
    d.run_task("compensate:b")
    d.run_task("handler:alert")
    assert d.of_type("WorkflowFailed")[0].compensation == "failed"


def test_compensation_has_its_own_retry_policy() -> None:
    d = driver(SAGA.replace("compensate: {task: undo, input: {of: \"${steps.a.output}\"}}",
                            "compensate: {task: undo, retry: {max_attempts: 2, initial_interval: 0}}"))  # fmt: skip
    d.run_task("a")
    d.run_task("b")
    d.fail(d.dispatch("c"), retryable=False)
    d.run_task("compensate:b")
    d.fail(d.dispatch("compensate:a"))
    d.advance(0)
    assert d.unit("compensate:a").attempt == 2


def test_nothing_to_undo_is_compensation_none() -> None:
    d = driver("steps: [{id: a, task: t, retry: {max_attempts: 1}}]")
    d.fail(d.dispatch("a"))
    assert d.of_type("WorkflowFailed")[0].compensation == "none"


def test_units_in_flight_are_cancelled_when_a_step_fails() -> None:
    d = driver(SAGA)
    d.dispatch("a")
    d.fail(d.dispatch("c"), retryable=False)
    cancelled = {e.step: e.reason for e in d.of_type("StepCancelled")}
    assert cancelled == {
        "a": "workflow aborted: step `c` failed",
        "b": "workflow aborted: step `c` failed",
    }


def test_nothing_new_starts_while_aborting() -> None:
    d = failed_saga()
    assert "d" not in d.state.steps


def test_a_cancelled_unit_late_success_is_a_duplicate_and_changes_nothing() -> None:
    d = driver(SAGA)
    token = d.dispatch("a")
    d.fail(d.dispatch("c"), retryable=False)
    ack = d.complete(token, "late")
    assert ack.reason == "duplicate result; step already resolved"
    assert "compensate:a" not in d.state.units


def test_a_failed_handler_is_recorded_and_the_others_still_run() -> None:
    d = driver("""
        steps: [{id: a, task: t, retry: {max_attempts: 1}}]
        on_failure:
          - {id: h1, task: t, retry: {max_attempts: 1}}
          - {id: h2, task: t}
    """)
    d.fail(d.dispatch("a"))
    d.fail(d.dispatch("handler:h1"))
    d.run_task("handler:h2")
    assert d.types()[-1] == "WorkflowFailed"


def test_on_cancel_handlers_see_the_cancel_reason() -> None:
    d = driver("""
        steps: [{id: a, task: t}]
        on_cancel: [{id: bye, value: "${error}"}]
    """)
    d.cancel("stop")
    assert d.unit("handler:bye").output == {"code": "CANCELLED", "message": "stop", "details": None}
    assert d.types()[-1] == "WorkflowCancelled"


def test_the_run_timeout_aborts_and_runs_on_timeout_handlers() -> None:
    d = driver("""
        timeout: 1h
        steps: [{id: a, task: t}]
        on_timeout: [{id: late, value: "${error.message}"}]
    """)
    d.dispatch("a")
    d.advance(3_600_000)
    assert d.unit("handler:late").output == "the run exceeded its timeout of 1h"
    assert d.types()[-1] == "WorkflowTimedOut"
    assert d.of_type("StepCancelled")[0].reason == "run timed out"


def test_the_run_timeout_does_not_cut_cleanup() -> None:
    d = driver("""
        timeout: 1m
        steps: [{id: a, task: t, compensate: {task: undo}}, {id: b, task: t, retry: {max_attempts: 1}}]
    """)
    d.run_task("a")
    d.fail(d.dispatch("b"))
    d.advance(10 * 60_000)
    assert d.state.status == "running" and d.scheduled() == ["compensate:a"]
    d.run_task("compensate:a")
    assert d.of_type("WorkflowFailed")[0].compensation == "completed"


def test_a_history_limit_emits_limit_exceeded_and_fails_with_its_code() -> None:
    d = driver(
        """
        steps:
          - {id: a, task: t}
          - {id: b, task: t}
          - {id: c, task: t}
        on_failure: [{id: h, value: "${error.code}"}]
    """,
        limits=ServerLimits(max_history_events=5),
    )
    d.run_task("a")
    [limit] = d.of_type("LimitExceeded")
    assert limit.limit == "max_history_events"
    assert d.unit("handler:h").output == "LIMIT_EXCEEDED"
    assert d.of_type("WorkflowFailed")[0].error.code == "LIMIT_EXCEEDED"
