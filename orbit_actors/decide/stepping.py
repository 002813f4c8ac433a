"""Replay, step by step: a run's history up to one event, the state it describes, and what the
decider decides right after it (pure).

The state is a fold of the events and needs no definition; what is decided after an event
depends on the definition, so a caller passes the one in force there (or a candidate's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..history import events as ev
from ..history.apply import replay
from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition
from .compat import DECIDED_TYPES
from .decider import decide_to_fixpoint


class SeqOutOfRangeError(ValueError):
    """The asked event is not in the run: the message says which seqs it has."""


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
    history: Sequence[ev.Event], at: int, definition: CompiledDefinition | None
) -> ReplayPoint:
    """The point after seq ``at`` (which :func:`check_seq` has accepted); ``decided`` is what
    ``definition`` decides there, at the time of the next decided event or else of this one."""
    state = state_at(history, at)
    view = state_view(state)
    decided: list[ev.Event] = []
    if definition is not None and state.started and not state.finished:
        decided = decide_to_fixpoint(state, definition, _decision_time(history, at))
    return ReplayPoint(at, len(history), history[at - 1], view, decided)


def _decision_time(history: Sequence[ev.Event], at: int) -> int:
    following = history[at] if at < len(history) else None
    if following is not None and following.type in DECIDED_TYPES:
        return following.timestamp_ms
    return history[at - 1].timestamp_ms


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
