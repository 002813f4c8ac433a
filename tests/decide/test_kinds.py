"""Every step kind: task, workflow, await, sleep, until, http, value, continue_as_new."""

from __future__ import annotations

from orbit_actors.decide import ChildInvocation, HttpInvocation, TaskInvocation, child_finished
from orbit_actors.decide.transitions import child_start_failed
from orbit_actors.testing.driver import START_MS
from tests.conftest import driver

DAY = 86_400_000


def test_a_task_unit_invokes_its_contract_with_the_recorded_input() -> None:
    d = driver("steps: [{id: a, task: t, input: {n: '${input.n}'}, timeout: 30s}]", {"n": 3})
    inv = d.invocation("a")
    assert inv == TaskInvocation("a", "t", "1", None, {"n": 3}, "ex-1/1/a", 1, False, 30_000)


def test_a_steps_language_overrides_the_contracts() -> None:
    d = driver("steps: [{id: a, task: py, language: go}, {id: b, task: py, after: []}]")
    a, b = d.invocation("a"), d.invocation("b")
    assert isinstance(a, TaskInvocation) and a.language == "go"
    assert isinstance(b, TaskInvocation) and b.language == "python"


def test_value_succeeds_at_once_with_its_template() -> None:
    d = driver("steps: [{id: a, value: {doubled: '${input.n * 2}'}}]", {"n": 4})
    assert d.unit("a").output == {"doubled": 8}
    assert d.state.status == "completed"


def test_a_sleep_is_a_durable_timer_that_fires_after_its_duration() -> None:
    d = driver("steps: [{id: nap, sleep: 7d}]")
    [started] = d.of_type("TimerStarted")
    assert started.fire_at_ms == START_MS + 7 * DAY
    d.advance(7 * DAY - 1)
    assert not d.state.finished
    d.advance(1)
    assert d.unit("nap").output == {"fired_at_ms": START_MS + 7 * DAY}
    assert d.state.status == "completed"


def test_until_takes_epoch_milliseconds_and_truncates_a_double() -> None:
    d = driver("steps: [{id: wake, until: input.at}]", {"at": START_MS + 1500.9})
    assert d.of_type("TimerStarted")[0].fire_at_ms == START_MS + 1500


def test_until_in_the_past_fires_at_once() -> None:
    d = driver("steps: [{id: wake, until: '0'}]")
    assert d.types()[-3:] == ["TimerFired", "StepSucceeded", "WorkflowCompleted"]


def test_an_http_step_invokes_the_builtin_request_with_its_evaluated_fields() -> None:
    d = driver(
        """
        steps:
          - id: call
            http: {method: post, url: "${input.url}", body: {a: 1}, timeout: 5s}
    """,
        {"url": "http://127.0.0.1:9/x"},
    )
    inv = d.invocation("call")
    assert isinstance(inv, HttpInvocation)
    assert inv.request == {
        "method": "POST",
        "url": "http://127.0.0.1:9/x",
        "headers": {},
        "body": {"a": 1},
    }
    assert inv.timeout_ms == 5000


def test_a_child_workflow_gets_a_deterministic_id_and_resolves_with_its_output() -> None:
    d = driver(
        """
        workflows: {kid: {version: 1.0.0}}
        steps: [{id: send_invoice, workflow: kid, input: {n: 1}}]
        output: "${steps.send_invoice.output}"
    """,
        execution_id="order-7",
    )
    inv = d.invocation("send_invoice")
    assert isinstance(inv, ChildInvocation) and inv.execution_id == "order-7.send_invoice"
    d.dispatch("send_invoice", "orbit-runtime", "child:order-7.send_invoice")
    d.record(child_finished(d.state, "send_invoice", workflow="kid", child_id=inv.execution_id,
                            status="completed", output={"ok": 1}, now=d.now))  # fmt: skip
    assert d.state.output == {"ok": 1}


def test_a_failed_child_fails_the_parent_unit_without_retry() -> None:
    d = driver("""
        workflows: {kid: {version: 1.0.0}}
        steps: [{id: k, workflow: kid}]
    """)
    d.dispatch("k", "orbit-runtime", "child:ex-1.k")
    from orbit_actors.history.events import ErrorInfo

    failure = ErrorInfo(code="OUT_OF_STOCK", message="nothing left")
    d.record(
        child_finished(
            d.state,
            "k",
            workflow="kid",
            child_id="ex-1.k",
            status="failed",
            failure=failure,
            now=d.now,
        )
    )
    [failed] = d.of_type("StepFailed")
    assert failed.error.code == "OUT_OF_STOCK"
    assert failed.error.message == "child workflow `kid` failed: nothing left"
    assert failed.error.details == {"child_execution_id": "ex-1.k"}
    assert d.of_type("RetryScheduled") == []


def test_a_cancelled_or_timed_out_child_has_its_own_code() -> None:
    for status, code in (("cancelled", "CHILD_CANCELLED"), ("timed_out", "CHILD_TIMED_OUT")):
        d = driver("workflows: {kid: {version: 1.0.0}}\nsteps: [{id: k, workflow: kid}]")
        d.dispatch("k", "orbit-runtime", "child:ex-1.k")
        d.record(
            child_finished(
                d.state, "k", workflow="kid", child_id="ex-1.k", status=status, now=d.now
            )
        )
        assert d.of_type("StepFailed")[0].error.code == code


def test_a_child_that_cannot_start_fails_the_unit_with_child_start_failed() -> None:
    d = driver("workflows: {kid: {version: 1.0.0}}\nsteps: [{id: k, workflow: kid}]")
    d.dispatch("k", "orbit-runtime", "child:ex-1.k")
    d.record(
        child_start_failed(d.state, "k", "workflow input is invalid at $.n: is required", d.now)
    )
    assert d.of_type("StepFailed")[0].error.code == "CHILD_START_FAILED"


def test_child_ids_of_fan_out_elements_and_handlers_and_later_runs() -> None:
    from orbit_actors.decide import child_execution_id

    assert child_execution_id("order-7", 1, "pick[3]") == "order-7.pick.3"
    assert child_execution_id("order-7", 1, "handler:cleanup") == "order-7.handler.cleanup"
    assert child_execution_id("order-7", 3, "send") == "order-7.run3.send"


def test_only_the_child_a_unit_was_dispatched_to_resolves_it() -> None:
    d = driver("workflows: {kid: {version: 1.0.0}}\nsteps: [{id: k, workflow: kid}]")
    d.dispatch("k", "orbit-runtime", "child:ex-1.run2.k")
    earlier = child_finished(
        d.state, "k", workflow="kid", child_id="ex-1.k", status="completed", output=1, now=d.now
    )
    assert earlier == []
    not_started = child_start_failed(d.state, "k", "gone", d.now, child_id="ex-1.k")
    assert not_started == []
    d.record(
        child_finished(
            d.state, "k", workflow="kid", child_id="ex-1.run2.k", status="completed", output=2,
            now=d.now,
        )
    )  # fmt: skip
    assert d.of_type("StepSucceeded")[0].output == 2
