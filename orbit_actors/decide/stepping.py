"""Replay, step by step: a run's history up to one event, the state it describes, and what the
decider decides right after it (pure).

The state is a fold of the events and needs no definition; what is decided after an event
depends on the definition, so a caller passes the one in force there (or a candidate's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import SeqOutOfRangeError
from ..history import events as ev
from ..history.apply import apply, replay
from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition
from .compat import decided_by_decider
from .decider import decide_to_fixpoint


@dataclass(frozen=True)
class ReplayPoint:
    """One point of a run: the event at ``at``, the state after it, and the decider's next
    events (empty when it waits for the outside world, or the run has ended)."""

    at: int
    last_seq: int
    event: ev.Event
    state: dict[str, Any]
    decided: list[ev.Event]


def check_seq(run: int, history: Sequence[ev.Event], at: int) -> None:
    """Raise :class:`SeqOutOfRangeError` unless ``at`` is a seq of ``history`` (run ``run``)."""
    if not 1 <= at <= len(history):
        raise SeqOutOfRangeError(f"run {run} has events 1 to {len(history)}")


def state_at(history: Sequence[ev.Event], at: int) -> ExecutionState:
    """The state after the event at seq ``at``."""
    return replay(history[:at])


def replay_point(
    history: Sequence[ev.Event], at: int, candidate: CompiledDefinition | None = None
) -> ReplayPoint:
    """The point after seq ``at`` (which :func:`check_seq` has accepted). ``decided`` is what
    the decider decided right after it: the recorded decisions that follow, or, with a
    ``candidate``, what the candidate decides from this state on (at the time of the next
    event)."""
    state = state_at(history, at)
    view = state_view(state)
    if candidate is None:
        decided = _recorded_decisions(state, history, at)
    elif state.started and not state.finished:
        decided = decide_to_fixpoint(state, candidate, _decision_time(history, at))
    else:
        decided = []
    return ReplayPoint(at, len(history), history[at - 1], view, decided)


def _recorded_decisions(
    state: ExecutionState, history: Sequence[ev.Event], at: int
) -> list[ev.Event]:
    """The decider's events that follow seq ``at`` in the history (``state`` is advanced)."""
    decided: list[ev.Event] = []
    for event in history[at:]:
        if not state.started or not decided_by_decider(state, event):
            break
        apply(state, event)
        decided.append(event)
    return decided


def _decision_time(history: Sequence[ev.Event], at: int) -> int:
    following = history[at] if at < len(history) else None
    return (following or history[at - 1]).timestamp_ms


def state_view(state: ExecutionState) -> dict[str, Any]:
    """What a person stepping through a run sees: the run's status and version, each step's and
    unit's status, the steps' outputs, signals not yet taken and armed timers."""
    return {
        "status": state.status,
        "version": state.version,
        "steps": {step_id: record.status for step_id, record in state.steps.items()},
        "units": {
            key: {"status": unit.status, "attempt": unit.attempt}
            for key, unit in state.units.items()
        },
        "outputs": {
            step_id: record.output
            for step_id, record in state.steps.items()
            if record.status == "succeeded"
        },
        "pending_signals": [
            {"seq": seq, "name": state.signals[seq].name, "payload": state.signals[seq].payload}
            for seq in sorted(seq for queue in state.undelivered.values() for seq in queue)
        ],
        "timers": [
            {"unit": entry.key, "kind": entry.kind, "due_ms": entry.due_ms}
            for entry in sorted(state.timers)
            if state.timer_applies(entry)
        ],
    }
