"""``schedule_to_start``: a unit no worker took in time fails its attempt with the retryable
SCHEDULE_TIMEOUT, and the retry policy decides what follows; the deadline is recorded on the
unit's ``StepScheduled``, so replay and a restart keep it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbit_actors.decide.context import Context
from orbit_actors.errors import DefinitionError
from orbit_actors.history import events as ev
from orbit_actors.history.apply import replay
from orbit_actors.ir import compile_source
from orbit_actors.testing import Driver

SOURCE = """
workflow: pay
version: 1.0.0
tasks:
  charge: {version: "2", schedule_to_start: 5m}
  other: {version: "1"}
steps:
  - {id: charge, task: charge, retry: {max_attempts: 2, initial_interval: 1s}}
"""


def started(source: str = SOURCE) -> Driver:
    return Driver(compile_source(source)).start({})


def test_the_deadline_to_be_taken_is_recorded_on_the_scheduled_event() -> None:
    d = started()
    [scheduled] = d.of_type("StepScheduled")
    assert scheduled.start_by_ms == scheduled.timestamp_ms + 300_000


def test_a_unit_no_worker_took_in_time_fails_its_attempt_with_schedule_timeout() -> None:
    d = started()
    d.advance(300_000)
    [failed] = d.of_type("StepAttemptFailed")
    assert (failed.error.code, failed.error.retryable) == ("SCHEDULE_TIMEOUT", True)
    assert failed.error.message == "no worker took charge@2 within 5m"


def test_a_schedule_timeout_is_retried_and_then_fails_the_step() -> None:
    d = started()
    d.advance(300_000)
    assert [e.next_attempt for e in d.of_type("RetryScheduled")] == [2]
    d.advance(1000)
    assert d.unit("charge").attempt == 2 and d.of_type("StepScheduled")[-1].start_by_ms
    d.advance(300_000)
    [step_failed] = d.of_type("StepFailed")
    assert step_failed.error.code == "SCHEDULE_TIMEOUT"
    assert d.state.status == "failed"


def test_a_unit_taken_in_time_is_not_timed_out() -> None:
    d = started()
    d.advance(299_999)
    d.dispatch("charge")
    d.advance(600_000)
    assert d.of_type("StepAttemptFailed") == []


def test_the_timer_survives_a_replay_of_the_history() -> None:
    d = started()
    state = replay(d.history)
    assert state.next_timer_ms() == d.of_type("StepScheduled")[0].start_by_ms


def test_a_task_without_its_own_takes_the_server_default() -> None:
    source = SOURCE.replace(", schedule_to_start: 5m", "")
    compiled = dataclasses.replace(compile_source(source), default_schedule_to_start_ms=60_000)
    d = Driver(compiled).start({})
    d.advance(60_000)
    assert d.of_type("StepAttemptFailed")[0].error.message == "no worker took charge@2 within 1m"


def test_without_schedule_to_start_a_unit_waits_forever() -> None:
    d = started(SOURCE.replace(", schedule_to_start: 5m", ""))
    assert d.of_type("StepScheduled")[0].start_by_ms is None
    d.advance(86_400_000)
    assert d.of_type("StepAttemptFailed") == []


def test_a_malformed_schedule_to_start_is_refused_with_its_path() -> None:
    with pytest.raises(DefinitionError) as refused:
        compile_source(SOURCE.replace("schedule_to_start: 5m", "schedule_to_start: soon"))
    assert "tasks.charge.schedule_to_start" in str(refused.value.problems[0].path)


def test_a_zero_schedule_to_start_times_the_unit_out_in_the_batch_that_schedules_it() -> None:
    d = started(SOURCE.replace("schedule_to_start: 5m", "schedule_to_start: 0s"))
    assert d.types()[2:] == ["StepScheduled", "StepAttemptFailed", "RetryScheduled"]
    d.assert_consistent()


EVERY_KIND = """
workflow: kinds
version: 1.0.0
tasks:
  charge: {version: "2", schedule_to_start: 5m}
  other: {version: "1"}
steps:
  - {id: charge, task: charge}
  - {id: plain, task: other}
  - id: call
    http: {method: post, url: "http://127.0.0.1:9/x", timeout: 5s}
on_failure:
  - {id: alert, task: charge}
  - {id: note, task: other}
"""


@given(
    default=st.none() | st.integers(min_value=0, max_value=10**9),
    value=st.none() | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    last_seq=st.integers(min_value=2, max_value=50),
)
def test_a_steps_first_attempt_is_scheduled_as_schedule_schedules_its_key(
    default: int | None, value: Any, last_seq: int
) -> None:
    compiled = dataclasses.replace(compile_source(EVERY_KIND), default_schedule_to_start_ms=default)
    state = Driver(compiled).start({}).state
    state.last_seq = last_seq
    for plan in compiled.plans.values():
        fast = Context(state, compiled, 1_000, None, [ev.StepSucceeded(1, 1, "x", 1, None)])
        reference = Context(state, compiled, 1_000, None, [ev.StepSucceeded(1, 1, "x", 1, None)])
        fast.schedule_step(plan, value)
        reference.schedule(plan.key, 1, value)
        assert fast.events == reference.events
