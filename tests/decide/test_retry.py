"""Retry policy, backoff, non-retryable codes and attempt deadlines."""

from __future__ import annotations

from orbit_actors.history import event_to_dict
from tests.conftest import driver


def test_a_retryable_failure_is_retried_after_the_backoff_delay() -> None:
    d = driver(
        "retry: {initial_interval: 1s, backoff: 3.0, max_attempts: 4}\nsteps: [{id: a, task: t}]"
    )
    d.fail(d.dispatch("a"))
    assert [(e.next_attempt, e.delay_ms) for e in d.of_type("RetryScheduled")] == [(2, 1000)]
    d.advance(999)
    assert d.scheduled() == []
    d.advance(1)
    assert d.scheduled() == ["a"] and d.unit("a").attempt == 2
    d.fail(d.dispatch("a"))
    assert d.of_type("RetryScheduled")[-1].delay_ms == 3000


def test_the_delay_is_capped_by_max_interval() -> None:
    d = driver(
        "retry: {initial_interval: 1s, backoff: 10.0, max_interval: 5s, max_attempts: 5}\nsteps: [{id: a, task: t}]"
    )
    for _ in range(3):
        d.fail(d.dispatch("a"))
        d.advance(60_000)
    assert [e.delay_ms for e in d.of_type("RetryScheduled")] == [1000, 5000, 5000]


def test_a_retry_reuses_the_recorded_input_and_the_idempotency_key() -> None:
    d = driver("steps: [{id: a, task: t, input: {n: '${input.n}'}}]", {"n": 1})
    d.fail(d.dispatch("a"))
    d.advance(1000)
    retried = d.of_type("StepScheduled")[-1]
    assert (retried.attempt, retried.input, retried.idempotency_key) == (2, {"n": 1}, "ex-1/1/a")


def test_after_max_attempts_the_unit_fails_with_the_last_error() -> None:
    d = driver("steps: [{id: a, task: t, retry: {max_attempts: 2, initial_interval: 0}}]")
    d.fail(d.dispatch("a"), "E1")
    d.advance(0)
    d.fail(d.dispatch("a"), "E2")
    [failed] = d.of_type("StepFailed")
    assert failed.error.code == "E2"


def test_a_non_retryable_flag_fails_at_once() -> None:
    d = driver("steps: [{id: a, task: t}]")
    d.fail(d.dispatch("a"), retryable=False)
    assert d.of_type("RetryScheduled") == [] and d.of_type("StepFailed")


def test_a_code_in_non_retryable_fails_at_once() -> None:
    d = driver("steps: [{id: a, task: t, retry: {non_retryable: [CARD_DECLINED]}}]")
    d.fail(d.dispatch("a"), "CARD_DECLINED", retryable=True)
    assert d.of_type("RetryScheduled") == []


def test_step_retry_overrides_the_workflows_field_by_field() -> None:
    d = driver(
        "retry: {max_attempts: 7, initial_interval: 2s}\nsteps: [{id: a, task: t, retry: {initial_interval: 5s}}]"
    )
    policy = d.definition.plans["a"].retry
    assert policy is not None
    assert (policy.max_attempts, policy.initial_interval, policy.max_interval) == (7, 5000, 60_000)


def test_an_attempt_past_its_deadline_fails_with_retryable_timeout() -> None:
    d = driver("steps: [{id: a, task: t, timeout: 30s}]")
    token = d.dispatch("a")
    assert d.of_type("StepDispatched")[0].deadline_ms == d.now + 30_000
    d.advance(30_000)
    [failed] = d.of_type("StepAttemptFailed")
    assert failed.error.code == "TIMEOUT" and failed.error.retryable
    assert failed.error.message == "attempt 1 of `a` timed out after 30s"
    assert d.of_type("RetryScheduled")
    assert d.fail(token).reason == "stale attempt"


def test_a_late_success_after_a_timeout_is_still_accepted() -> None:
    d = driver("steps: [{id: a, task: t, timeout: 1s}]")
    token = d.dispatch("a")
    d.advance(1000)
    assert d.complete(token, {"late": True}).accepted
    assert d.state.status == "completed"


def test_no_deadline_without_a_timeout() -> None:
    d = driver("steps: [{id: a, task: t}]")
    d.dispatch("a")
    assert "deadline_ms" not in event_to_dict(d.of_type("StepDispatched")[0])
