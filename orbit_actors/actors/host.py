"""What an execution actor needs from the rest of the runtime, as a Protocol, so the actor can be
spawned directly in tests with a fake host."""

from __future__ import annotations

from typing import Protocol

from ..decide.invocation import ChildInvocation, HttpInvocation, TaskInvocation
from ..history.events import Event
from ..history.state import ExecutionState
from ..ir.plan import CompiledDefinition
from ..store.base import Store
from ..wire.messages import Task
from .clock import Clock


class ExecutionHost(Protocol):
    """The runtime around execution actors."""

    store: Store
    clock: Clock

    def enqueue_task(self, execution_id: str, invocation: TaskInvocation) -> None:
        """A task unit is ready for a worker."""
        ...

    def claim_worker(
        self, execution_id: str, invocation: TaskInvocation, token: str
    ) -> tuple[str, str] | None:
        """A session with free capacity for ``invocation`` right now, reserved for ``token``:
        (session id, worker id); None when the unit must wait in the dispatcher."""
        ...

    def release_offer(self, session_id: str, token: str) -> None:
        """An offer was stale: give the session its slot back."""
        ...

    def push_task(self, session_id: str, task: Task) -> None:
        """Send a dispatched task to its session."""
        ...

    def adopt_token(
        self, session_id: str, worker_id: str, task: Task, dispatched_at_ms: int
    ) -> None:
        """After a restart: a task held by a session of the previous process."""
        ...

    def cancel_tokens(self, tokens: dict[str, str]) -> None:
        """Tell workers (or the built-in runner) to stop these tokens, with a reason each."""
        ...

    def start_child(self, parent: ExecutionState, invocation: ChildInvocation) -> None:
        """Start (idempotently) the child of a dispatched workflow unit and watch it."""
        ...

    def cancel_child(self, child_id: str, reason: str) -> None:
        """Cancel a child the parent no longer waits for."""
        ...

    def run_http(self, execution_id: str, token: str, invocation: HttpInvocation) -> None:
        """Run a dispatched built-in http unit."""
        ...

    def committed(self, state: ExecutionState, events: list[Event], seconds: float) -> None:
        """A batch of ``state``'s events became durable after ``seconds`` (for the metrics)."""
        ...

    def finished(self, state: ExecutionState, definition: CompiledDefinition) -> None:
        """The execution ended: wake waiters, tell the parent."""
        ...
