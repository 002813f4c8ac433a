"""A pure, in-memory driver of one execution: it feeds the decider the events a worker, a signal
or the clock would cause, so a test reads as the rule it checks. No trio, no store."""

from __future__ import annotations

import itertools
from typing import Any

from ..decide import operate
from ..decide import transitions as cmd
from ..decide.decider import decide, decide_to_fixpoint, next_wakeup
from ..decide.invocation import Invocation, invocation
from ..decide.query import evaluate_query
from ..decide.rerun import RerunPlan, plan_rerun, rerun_events
from ..history import events as ev
from ..history.apply import apply, replay
from ..history.state import ExecutionState, Unit
from ..ir import compile_source
from ..ir.plan import CompiledDefinition

START_MS = 1_700_000_000_000


class Driver:
    """Runs one execution of ``definition`` against a fake clock and fake workers."""

    def __init__(
        self,
        definition: CompiledDefinition | str,
        *,
        execution_id: str = "ex-1",
        limits: cmd.ServerLimits | None = None,
        now: int = START_MS,
    ) -> None:
        self.definition = compile_source(definition) if isinstance(definition, str) else definition
        self.execution_id = execution_id
        self.server_limits = limits or cmd.ServerLimits()
        self.now = now
        self.state = ExecutionState()
        self.history: list[ev.Event] = []
        self.runs: list[list[ev.Event]] = []
        self._tokens = itertools.count(1)

    # -- commands -------------------------------------------------------------------------
    def start(self, input: Any = None, *, parent: ev.ParentRef | None = None) -> Driver:
        """Start the execution and decide."""
        limits = cmd.effective_limits(self.server_limits, self.definition)
        events = cmd.start_run(
            self.definition, execution_id=self.execution_id, input=input, now=self.now,
            limits=limits, parent=parent,
        )  # fmt: skip
        self.record(events)
        return self

    def record(self, events: list[ev.Event]) -> list[ev.Event]:
        """Apply command events, then decide to the fixpoint; returns everything recorded."""
        for event in events:
            self._apply(event)
        decided = decide_to_fixpoint(self.state, self.definition, self.now)
        self.history.extend(decided)
        if self.state.status == "continued_as_new":
            self._roll_over()
        return [*events, *decided]

    def terminate(self, reason: str = "terminated by request") -> list[ev.Event]:
        """Terminate the execution."""
        return self.record(operate.terminate(self.state, reason, self.now))

    def pause(self, reason: str | None = None) -> list[ev.Event]:
        """Pause the execution."""
        return self.record(operate.pause(self.state, reason, self.now))

    def unpause(self) -> list[ev.Event]:
        """Unpause the execution."""
        return self.record(operate.unpause(self.state, self.execution_id, self.now))

    def plan_rerun(
        self, from_step: str | None = None, definition: CompiledDefinition | None = None
    ) -> RerunPlan:
        """What a rerun of the finished run would do (the dry run)."""
        return plan_rerun(self.state, self.definition, definition or self.definition, from_step)

    def rerun(
        self, from_step: str | None = None, *, input: Any = None,
        definition: CompiledDefinition | None = None,
    ) -> RerunPlan:  # fmt: skip
        """Rerun the finished run from a step: the next run starts (on ``definition`` when
        given) with the reused steps' outputs, and is decided."""
        new = definition or self.definition
        plan = self.plan_rerun(from_step, new)
        limits = cmd.effective_limits(self.server_limits, new)
        first = rerun_events(self.state, plan, new, input=input, limits=limits, now=self.now)
        self.runs.append(self.history)
        self.state, self.history, self.definition = ExecutionState(), [], new
        self.record(first)
        return plan

    def _apply(self, event: ev.Event) -> None:
        apply(self.state, event)
        self.history.append(event)

    def _roll_over(self) -> None:
        """Write the next run's first events; like the actor, decide it on the next wake-up,
        so a run that continues again at once is not advanced in a loop."""
        first = cmd.next_run_events(self.state, self.now)
        self.runs.append(self.history)
        self.state, self.history = ExecutionState(), []
        for event in first:
            self._apply(event)

    def dispatch(self, key: str, worker_id: str = "w1", session: str = "s1") -> str:
        """Hand unit ``key`` to a worker; returns the token."""
        token = f"t{next(self._tokens)}"
        events = cmd.dispatch(
            self.state,
            self.definition,
            key,
            token=token,
            worker_id=worker_id,
            session=session,
            now=self.now,
        )
        assert events is not None, f"unit {key} is not ready for dispatch"
        self.record(events)
        return token

    def complete(self, token: str, output: Any = None, worker_id: str | None = None) -> cmd.Verdict:
        """A worker completes ``token``."""
        events, ack = cmd.report_result(
            self.state, self.definition, token, now=self.now, worker_id=worker_id, output=output
        )
        self.record(events)
        return ack

    def fail(
        self, token: str, code: str = "BOOM", message: str = "it broke", retryable: bool = True
    ) -> cmd.Verdict:
        """A worker fails ``token``."""
        failure = ev.ErrorInfo(code=code, message=message, retryable=retryable)
        events, ack = cmd.report_result(
            self.state, self.definition, token, now=self.now, failure=failure
        )
        self.record(events)
        return ack

    def run_task(self, key: str, output: Any = None) -> cmd.Verdict:
        """Dispatch ``key`` and complete it at once."""
        return self.complete(self.dispatch(key), output)

    def signal(self, name: str, payload: Any = None) -> list[ev.Event]:
        """Send a signal."""
        return self.record(cmd.receive_signal(self.state, self.definition, name, payload, self.now))

    def cancel(self, reason: str = "no longer needed") -> list[ev.Event]:
        """Request cancellation."""
        return self.record(cmd.request_cancel(self.state, self.definition, reason, self.now))

    def lose_worker(
        self, token: str, reason: str = "worker `w1` stopped responding"
    ) -> list[ev.Event]:
        """The session holding ``token`` died."""
        return self.record(cmd.attempt_uncertain(self.state, token, reason, self.now))

    def advance(self, ms: int) -> list[ev.Event]:
        """Move the clock forward and wake the execution at each wake-up on the way; a run
        started by continue-as-new on the way waits for the next call."""
        target = self.now + ms
        recorded: list[ev.Event] = []
        runs = len(self.runs)
        while len(self.runs) == runs:
            wake = next_wakeup(self.state, self.definition)
            if wake is None or wake > target:
                break
            self.now = max(self.now, wake)
            recorded += self.record([])
        self.now = max(self.now, target) if len(self.runs) == runs else self.now
        return recorded

    def query(self, name: str) -> Any:
        """Evaluate a query."""
        return evaluate_query(self.state, self.definition, name)

    # -- views ----------------------------------------------------------------------------
    def unit(self, key: str) -> Unit:
        """A unit of the current run."""
        return self.state.units[key]

    def invocation(self, key: str) -> Invocation | None:
        """What a unit invokes."""
        return invocation(self.state, self.definition, key)

    def scheduled(self) -> list[str]:
        """Keys of units waiting for dispatch (task, http and workflow units), oldest first."""
        keys = [
            k for k, u in self.state.units.items() if u.status == "scheduled" and self.invocation(k)
        ]
        return sorted(keys, key=lambda k: self.state.units[k].scheduled_seq)

    def types(self) -> list[str]:
        """The event types of the current run's history, in order."""
        return [e.type for e in self.history]

    def of_type(self, type_name: str) -> list[Any]:
        """The events of one type in the current run."""
        return [e for e in self.history if e.type == type_name]

    def assert_consistent(self) -> None:
        """The history replays to the same state and the decider is at its fixpoint."""
        again = replay(self.history)
        assert again.last_seq == self.state.last_seq
        assert again.status == self.state.status
        assert decide(self.state, self.definition, self.now) == []
