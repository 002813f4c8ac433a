"""At-least-once delivery: redelivery after a lost worker, late, duplicate, stale and unknown
results, the output contract, authorization and payload limits."""

from __future__ import annotations

import pytest

from orbit_actors.decide import ServerLimits
from orbit_actors.errors import ForbiddenError, PayloadTooLargeError
from orbit_actors.ir import compile_source
from orbit_actors.testing import Driver
from tests.conftest import driver

CHARGE = """
steps: [{id: a, task: t}]
"""


def test_a_lost_worker_makes_the_attempt_uncertain_and_redelivers_it() -> None:
    d = driver(CHARGE)
    token = d.dispatch("a")
    d.lose_worker(token)
    [uncertain] = d.of_type("StepAttemptUncertain")
    assert uncertain.reason == "worker `w1` stopped responding"
    again = d.of_type("StepScheduled")[-1]
    assert (again.attempt, again.redelivery, again.idempotency_key) == (1, True, "ex-1/1/a")
    assert d.scheduled() == ["a"]


def test_a_late_success_from_the_lost_worker_is_accepted() -> None:
    d = driver(CHARGE)
    old = d.dispatch("a")
    d.lose_worker(old)
    d.dispatch("a", "w2", "s2")
    assert d.complete(old, {"from": "old"}).accepted
    assert d.unit("a").output == {"from": "old"}


def test_a_second_success_is_recorded_as_a_duplicate() -> None:
    d = driver(CHARGE + "\n")
    old = d.dispatch("a")
    d.lose_worker(old)
    new = d.dispatch("a", "w2", "s2")
    d.complete(new, 1)
    ack = d.complete(old, 2)
    assert (ack.accepted, ack.reason) == (
        False,
        "unknown token (execution finished or token invalid)",
    )


def test_a_result_for_a_resolved_unit_of_a_running_execution_is_a_duplicate() -> None:
    d = driver("steps: [{id: a, task: t}, {id: b, task: t}]")
    old = d.dispatch("a")
    d.lose_worker(old)
    new = d.dispatch("a", "w2", "s2")
    d.complete(new, 1)
    ack = d.complete(old, 2)
    assert (ack.accepted, ack.reason) == (False, "duplicate result; step already resolved")
    assert d.of_type("StaleResultIgnored")[-1].outcome == "duplicate"
    assert d.unit("a").output == 1


def test_a_failure_from_a_non_current_token_is_stale() -> None:
    d = driver("steps: [{id: a, task: t}, {id: b, task: t}]")
    old = d.dispatch("a")
    d.lose_worker(old)
    d.dispatch("a", "w2", "s2")
    ack = d.fail(old)
    assert (ack.accepted, ack.reason) == (False, "stale attempt")
    assert d.of_type("StaleResultIgnored")[-1].outcome == "failure"
    assert d.unit("a").status == "dispatched"


def test_an_unknown_token_is_answered_without_recording() -> None:
    d = driver(CHARGE)
    before = len(d.history)
    ack = d.complete("never-issued", 1)
    assert (ack.accepted, ack.reason) == (
        False,
        "unknown token (execution finished or token invalid)",
    )
    assert len(d.history) == before


def test_a_result_for_another_workers_token_is_forbidden() -> None:
    d = driver(CHARGE)
    token = d.dispatch("a", "w1")
    with pytest.raises(ForbiddenError):
        d.complete(token, 1, worker_id="w2")
    assert d.complete(token, 1, worker_id="w1").accepted


def test_an_output_breaking_the_contract_is_a_non_retryable_attempt_failure() -> None:
    d = Driver(
        compile_source("""
        workflow: wf
        version: 1.0.0
        tasks:
          payments.charge: {version: "1", output: {type: object, required: [charge_id], properties: {charge_id: {type: string}, fee: {type: number, default: 0}}}}
        steps: [{id: a, task: payments.charge}]
    """)
    ).start()
    ack = d.complete(d.dispatch("a"), {"charge_id": 7})
    assert (ack.accepted, ack.reason) == (False, "output violates the task contract")
    [failed] = d.of_type("StepAttemptFailed")
    assert failed.error.code == "OUTPUT_CONTRACT_VIOLATION" and not failed.error.retryable
    assert failed.error.message.startswith(
        "worker output for `payments.charge` does not match its contract at $.charge_id: "
    )
    assert d.state.status == "failed"


def test_contract_defaults_are_applied_to_an_accepted_output() -> None:
    d = Driver(
        compile_source("""
        workflow: wf
        version: 1.0.0
        tasks:
          c: {version: "1", output: {type: object, properties: {fee: {type: number, default: 0}}}}
        steps: [{id: a, task: c}]
    """)
    ).start()
    d.complete(d.dispatch("a"), {"extra": True})
    assert d.unit("a").output == {"extra": True, "fee": 0}


def test_a_result_over_the_payload_limit_records_nothing() -> None:
    d = driver(CHARGE, limits=ServerLimits(max_payload_bytes=100))
    token = d.dispatch("a")
    before = len(d.history)
    with pytest.raises(PayloadTooLargeError, match=r"^task result is \d+ bytes; the limit is 100"):
        d.complete(token, "x" * 200)
    assert len(d.history) == before
    assert d.complete(token, "small").accepted


def test_a_stale_dispatch_offer_is_refused() -> None:
    from orbit_actors.decide import dispatch

    d = driver(CHARGE)
    d.dispatch("a")
    assert (
        dispatch(d.state, d.definition, "a", token="x", worker_id="w", session="s", now=d.now)
        is None
    )
    assert (
        dispatch(d.state, d.definition, "zz", token="x", worker_id="w", session="s", now=d.now)
        is None
    )


def test_a_late_success_while_waiting_to_retry_is_accepted_and_the_retry_dropped() -> None:
    d = driver(CHARGE)
    token = d.dispatch("a")
    d.fail(token)
    assert d.unit("a").status == "retry_wait"
    d.lose_worker(token)
    assert d.complete(token, {"late": 1}).accepted
    d.advance(60_000)
    assert d.state.status == "completed" and d.unit("a").attempt == 1
