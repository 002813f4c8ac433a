"""One commit observer tells each event to what every table files under its type, in the
tables' order, and then the whole batch to the batch observers; other types reach nobody."""

from __future__ import annotations

from typing import Any

from orbit_actors.history.events import Event, TimerFired, WorkflowStarted
from orbit_actors.history.state import ExecutionState
from orbit_actors.observe.commits import EventObserver, observe_commits


def noting(told: list[str], name: str) -> EventObserver:
    def observe(state: ExecutionState, event: Any) -> None:
        told.append(f"{name}:{event.type}")

    return observe


def test_each_event_reaches_its_types_observers_in_table_order_then_the_batch() -> None:
    told: list[str] = []

    def batch(state: ExecutionState, events: list[Event], seconds: float) -> None:
        told.append(f"batch:{len(events)}:{seconds}")

    committed = observe_commits(
        [
            {"WorkflowStarted": noting(told, "metrics")},
            {"WorkflowStarted": noting(told, "log"), "StepFailed": noting(told, "log")},
        ],
        batch,
    )
    events: list[Event] = [
        WorkflowStarted(seq=2, timestamp_ms=0),
        TimerFired(seq=3, timestamp_ms=0, step="wait"),
    ]
    committed(ExecutionState(), events, 0.5)
    assert told == ["metrics:WorkflowStarted", "log:WorkflowStarted", "batch:2:0.5"]
