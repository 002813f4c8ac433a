"""Could a candidate definition have written this history? The upgrade check's pure core.

A recorded run is fed to the candidate's decider event by event. Events the outside world caused
(a start, a dispatch, a worker's result, a signal, a cancel) are applied as recorded; at each
event the decider caused, the candidate must propose exactly that event — same type, same step,
same attempt, same input — and before each outside event it must have nothing more to decide.
The first place where it does otherwise is the :class:`Divergence`. Besides, the candidate must
accept each outside event: declare each signal the run received, and call the same task, child
workflow version or http request as the version in force when each unit was dispatched.

A recorded wait stands: a retry's delay and a timer's due time already decided are not compared
(a changed retry policy or sleep applies to what is decided after the migration).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..history import events as ev
from ..history.apply import apply
from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition
from .decider import decide
from .invocation import ChildInvocation, HttpInvocation, TaskInvocation, invocation
from .narrate import candidate_sentence, phrase, recorded_sentence

DECIDED_TYPES = frozenset(
    {
        "StepScheduled", "StepSkipped", "StepFanOut", "RetryScheduled", "StepFailed",
        "StepCancelled", "TimerStarted", "TimerFired", "SignalDelivered", "LimitExceeded",
        "WorkflowCompleted", "WorkflowFailed", "WorkflowCancelled", "WorkflowTimedOut",
        "WorkflowContinuedAsNew",
    }
)  # fmt: skip
"""Event types only the decider writes; others come from outside (commands, workers), except
the results the decider records itself (see :func:`decided_by_decider`)."""

_POSITION = frozenset({"seq", "timestamp_ms"})
_NOT_COMPARED: dict[str, frozenset[str]] = {
    "RetryScheduled": _POSITION | {"delay_ms"},
    "TimerStarted": _POSITION | {"fire_at_ms"},
}
_BLANK_POSITION: dict[str, None] = dict.fromkeys(_POSITION)
_BLANKS = {kind: dict.fromkeys(fields) for kind, fields in _NOT_COMPARED.items()}

Definitions = Callable[[str], CompiledDefinition | None]
"""A compiled definition by its hash (the versions a history ran under)."""


@dataclass(frozen=True)
class Divergence:
    """The first event where a candidate would not have written the history: its seq, and one
    sentence each for what was recorded and what the candidate would do."""

    seq: int
    recorded: str
    candidate: str


def first_divergence(
    history: Sequence[ev.Event], candidate: CompiledDefinition, definitions: Definitions
) -> Divergence | None:
    """Where ``candidate`` would first have decided otherwise than ``history`` (one run), or
    None when it is compatible. Pure; never raises for a candidate that does not fit."""
    state = ExecutionState()
    position = 0
    while position < len(history):
        event = history[position]
        if state.started and decided_by_decider(state, event):
            found, position = _decided_batch(state, candidate, history, position)
        else:
            before = history[position - 1].timestamp_ms if position else event.timestamp_ms
            found = _outside_event(state, candidate, definitions, event, before)
            position += 1
        if found is not None:
            return found
    return _after_the_end(state, candidate, history)


def _decided_batch(
    state: ExecutionState, candidate: CompiledDefinition, history: Sequence[ev.Event], at: int
) -> tuple[Divergence | None, int]:
    """Compare one round of the candidate's decisions with the recorded events from ``at``."""
    first = history[at]
    proposed = _decide(state, candidate, first.timestamp_ms)
    if isinstance(proposed, str):
        return Divergence(first.seq, recorded_sentence(first), candidate_sentence(proposed)), at
    if not proposed:
        return Divergence(first.seq, recorded_sentence(first), candidate_sentence(_NOTHING)), at
    for offset, wanted in enumerate(proposed):
        got = history[at + offset] if at + offset < len(history) else None
        if got is None:
            text = f"Nothing is recorded after seq {history[-1].seq}."
            return Divergence(wanted.seq, text, candidate_sentence(phrase(wanted))), at
        if not same_decision(wanted, got):
            return Divergence(got.seq, recorded_sentence(got), _instead(wanted)), at
        apply(state, got)
    return None, at + len(proposed)


def _outside_event(
    state: ExecutionState, candidate: CompiledDefinition, definitions: Definitions,
    event: ev.Event, before_ms: int,
) -> Divergence | None:  # fmt: skip
    """The candidate must have nothing left to decide before ``event`` (at the time of the event
    before it: the actor decided to its fixpoint then), and must accept it. A run started by
    continue-as-new has not decided yet when the signals it carries over are recorded, nor a
    rerun when the steps it reuses are (``StepReused``, committed with its opening events)."""
    opening = isinstance(event, ev.StepReused)
    if state.started and not state.finished and state.steps and not opening:
        proposed = _decide(state, candidate, before_ms)
        if isinstance(proposed, str) or proposed:
            action = proposed if isinstance(proposed, str) else phrase(proposed[0])
            return Divergence(event.seq, recorded_sentence(event), _instead_text(action))
    refusal = _refusal(state, candidate, definitions, event)
    if refusal is not None:
        return Divergence(event.seq, recorded_sentence(event), candidate_sentence(refusal))
    apply(state, event)
    return None


def _after_the_end(
    state: ExecutionState, candidate: CompiledDefinition, history: Sequence[ev.Event]
) -> Divergence | None:
    """After the last recorded event the candidate must be at its fixpoint too (unless the run,
    started by continue-as-new, has not decided yet)."""
    if not history or not state.started or state.finished or not state.steps:
        return None
    proposed = _decide(state, candidate, history[-1].timestamp_ms)
    if not proposed:
        return None
    action = proposed if isinstance(proposed, str) else phrase(proposed[0])
    text = f"Nothing is recorded after seq {history[-1].seq}."
    return Divergence(history[-1].seq + 1, text, candidate_sentence(action))


def decided_by_decider(state: ExecutionState, event: ev.Event) -> bool:
    """True when the decider wrote ``event``: its type says so, or it is the output of a unit
    no one was handed (a value, a timer, an await), or an attempt failed at its deadline."""
    if event.type in DECIDED_TYPES:
        return True
    if isinstance(event, ev.StepSucceeded):
        unit = state.units.get(event.step)
        return unit is not None and not unit.tokens
    if isinstance(event, ev.StepAttemptFailed) and event.error.code == "TIMEOUT":
        unit = state.units.get(event.step)
        deadline = unit.deadline_ms if unit is not None else None
        return deadline is not None and event.timestamp_ms >= deadline
    return False


def same_decision(proposed: ev.Event, recorded: ev.Event) -> bool:
    """True when the candidate's event is the recorded one, up to its position in time and the
    fields of an already decided wait."""
    if proposed.type != recorded.type:
        return False
    if proposed == recorded:  # the usual case: decided at the recorded time
        return True
    blank = _BLANKS.get(proposed.type, _BLANK_POSITION)
    # the fields themselves, with the ignored ones blanked (a dump to JSON costs ten times more)
    return {**_fields(proposed), **blank} == {**_fields(recorded), **blank}


def _fields(event: ev.Event) -> dict[str, Any]:
    return {name: getattr(event, name) for name in event.__dataclass_fields__}


_NOTHING = "decide nothing at this point"


def _instead(wanted: ev.Event) -> str:
    return _instead_text(phrase(wanted))


def _instead_text(action: str) -> str:
    return candidate_sentence(f"{action} instead")


def _decide(state: ExecutionState, candidate: CompiledDefinition, now: int) -> list[ev.Event] | str:
    """The candidate's next round, or why it cannot decide on this state at all (a unit of a
    step it does not have, say): the decider trusts its state, which a foreign one breaks."""
    try:
        return decide(state, candidate, now)
    except (KeyError, AssertionError, TypeError, ValueError, IndexError) as exc:
        return f"be unable to decide here ({type(exc).__name__}: {exc})"


def _refusal(
    state: ExecutionState, candidate: CompiledDefinition, definitions: Definitions, event: ev.Event
) -> str | None:
    """What the candidate would do instead of accepting an outside event, if it would not."""
    if isinstance(event, ev.SignalReceived) and event.name not in candidate.ir.signals:
        return f"refuse signal `{event.name}`, which it does not declare"
    if isinstance(event, ev.StepDispatched):
        base = definitions(state.definition_hash)
        if base is None:
            return None
        recorded, wanted = _callee(state, base, event.step), _callee(state, candidate, event.step)
        if recorded != wanted:
            return f"hand step `{event.step}` to {wanted} instead of {recorded}"
    return None


def _callee(state: ExecutionState, definition: CompiledDefinition, key: str) -> str:
    """What a unit calls under ``definition``, in words."""
    try:
        found = invocation(state, definition, key)
    except (KeyError, AssertionError):
        return "nothing (it has no such step)"
    if isinstance(found, TaskInvocation):
        return f"task `{found.task_name}@{found.contract_version}`"
    if isinstance(found, ChildInvocation):
        return f"child workflow `{found.workflow}@{found.version}`"
    if isinstance(found, HttpInvocation):
        return "the built-in http request"
    return "nothing"


def migrated_event(state: ExecutionState, to: CompiledDefinition, now: int) -> ev.Event:
    """The ``DefinitionMigrated`` that moves ``state``'s run onto ``to``."""
    return ev.DefinitionMigrated(
        seq=state.last_seq + 1, timestamp_ms=now, from_version=state.version,
        to_version=to.version, definition_hash=to.definition_hash,
    )  # fmt: skip


def not_migrated(version: str, finished: bool) -> dict[str, Any]:
    """The outcome of a migration refused before any check: the run ended or moved on."""
    reason = "the execution has finished" if finished else f"the execution runs version {version}"
    return {"migrated": False, "first_divergent_seq": None, "reason": reason}
