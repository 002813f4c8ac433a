"""When an execution may leave memory, and what must bring it back (architecture.md,
"Passivation and recovery in seconds").

An execution **rests** when nothing of it is in flight at a worker or in the runtime and nothing
is ready to dispatch: every unresolved unit waits for a signal, a timer, a retry's backoff or a
child (an ``await`` or ``sleep`` unit is "scheduled" while it waits: only units something runs
count as in hand). A resting execution can be passivated; its ``wake_at_ms`` (the next timer,
deadline, retry or run timeout) brings it back on time, and a command brings it back at once.
An execution is **busy** when something is in flight or ready (a child counts here: after a
restart the parent must look at its children again); a restart brings busy executions back at
once, so their attempts turn uncertain and are redelivered as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition
from .decider import next_wakeup
from .invocation import CHILD_SESSION, RUN_KINDS, unit_kind

_IN_HAND = frozenset({"scheduled", "dispatched", "attempt_failed", "uncertain"})
"""Unit statuses of work that is in flight or about to be dispatched."""


@dataclass(slots=True)
class Rest:
    """``wake_at_ms``: when the execution next needs deciding on its own (None: only a command
    can move it); ``busy``: a restart must bring it back at once; ``rests``: it may leave
    memory now."""

    wake_at_ms: int | None
    busy: bool
    rests: bool


def rest_of(state: ExecutionState, definition: CompiledDefinition) -> Rest:
    """How ``state`` rests (see the module docstring)."""
    wake = next_wakeup(state, definition)
    if state.finished or not state.started:
        return Rest(wake, not state.finished, False)  # (wake_at_ms, busy, rests)
    busy = False
    units = state.units
    for key in chain(state.inflight, state.cleanup_inflight):  # the unresolved units only
        unit = units[key]
        status = unit.status
        if state.paused and status == "scheduled":
            continue  # it waits for the unpause: a command
        if status not in _IN_HAND:
            continue
        if unit.role == "compensate":
            kind = unit_kind(definition, unit)
        else:  # what unit_kind finds for a step's own unit, without the call
            kind = definition.plans[unit.step_id].kind
        if kind in RUN_KINDS:
            at_a_child = status == "dispatched" and (unit.session or "").startswith(CHILD_SESSION)
            if not at_a_child:
                return Rest(wake, True, False)
            busy = True
    return Rest(wake, busy, True)
