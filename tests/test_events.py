"""Events have stable JSON: absent optional fields are left out, payloads keep their nulls."""

from __future__ import annotations

from orbit_actors.history import event_from_json, event_to_dict
from orbit_actors.history.events import (
    EffectiveLimits,
    ErrorInfo,
    StepDispatched,
    StepFailed,
    StepSucceeded,
    WorkflowCreated,
)


def test_an_absent_deadline_is_left_out() -> None:
    event = StepDispatched(
        seq=4, timestamp_ms=1, step="a", attempt=1, token="t", worker_id="w", worker_session="s"
    )
    assert event_to_dict(event) == {"seq": 4, "timestamp_ms": 1, "type": "StepDispatched", "step": "a", "attempt": 1,
                                    "token": "t", "worker_id": "w", "worker_session": "s"}  # fmt: skip


def test_a_null_output_is_kept() -> None:
    event = StepSucceeded(seq=1, timestamp_ms=1, step="a", attempt=1, output=None)
    assert event_to_dict(event)["output"] is None


def test_errors_leave_out_absent_details() -> None:
    event = StepFailed(seq=1, timestamp_ms=1, step="a", error=ErrorInfo(code="X", message="m"))
    assert event_to_dict(event)["error"] == {"code": "X", "message": "m", "retryable": False}


def test_events_round_trip_through_json() -> None:
    limits = EffectiveLimits(max_fan_out=1, max_history_events=2, max_payload_bytes=3)
    event = WorkflowCreated(seq=1, timestamp_ms=1, execution_id="e", workflow="w", version="1.0.0",
                            definition_hash="h", input={"a": None}, limits=limits)  # fmt: skip
    data = event_to_dict(event)
    assert "parent" not in data and "schedule_id" not in data and data["run"] == 1
    assert event_from_json(data) == event
