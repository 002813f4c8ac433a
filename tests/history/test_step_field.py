"""``ExecutionState.step_field(id, name)`` is ``step_view(id)[name]``, read without building the
view: for a pending step, for every status a step record can have, with and without an error,
and a ``KeyError`` for a name the view does not have."""

from __future__ import annotations

from typing import Any

import pytest

from orbit_actors.history.events import ErrorInfo
from orbit_actors.history.state import ExecutionState, StepRecord

_STATUSES = ["pending", "running", "succeeded", "failed", "skipped", "cancelled"]


def _state(status: str, error: ErrorInfo | None) -> ExecutionState:
    state = ExecutionState()
    if status != "pending":
        record = StepRecord("a", "main", status=status, attempts=2)  # type: ignore[arg-type]
        record.output, record.error = {"n": 1}, error
        state.steps["a"] = record
    return state


@pytest.mark.parametrize("status", _STATUSES)
@pytest.mark.parametrize("error", [None, ErrorInfo(code="E", message="m", details={"k": 1})])
def test_a_step_field_is_the_field_of_its_view(status: str, error: ErrorInfo | None) -> None:
    state = _state(status, error)
    view: dict[str, Any] = state.step_view("a")
    for name in ("status", "output", "error", "attempts"):
        assert state.step_field("a", name) == view[name]
    with pytest.raises(KeyError):
        state.step_field("a", "nope")
