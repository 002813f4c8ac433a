"""Every command an actor takes from its mailbox, one at a time: the execution actor's and the
scheduler's. A command is an imperative; one carrying a ``reply`` is a request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..history.events import ErrorInfo
from ..mailbox import Command

if TYPE_CHECKING:
    from .schedule import ScheduleSpec


@dataclass(eq=False)
class DeliverSignal(Command):
    """Record a signal; replies with its seq."""

    name: str
    payload: Any


@dataclass(eq=False)
class RequestCancel(Command):
    """Cancel the execution; replies with None."""

    reason: str


@dataclass(eq=False)
class Terminate(Command):
    """End the execution at once (no compensation, no handlers); replies with None."""

    reason: str


@dataclass(eq=False)
class Pause(Command):
    """Stop dispatching until unpaused (nothing when paused already); replies with None."""

    reason: str | None


@dataclass(eq=False)
class Unpause(Command):
    """Dispatch what waited while paused; replies with None."""


@dataclass(eq=False)
class ReportResult(Command):
    """A worker's result for ``token``; replies with the Verdict once it is durable."""

    token: str
    worker_id: str | None
    output: Any = None
    failure: ErrorInfo | None = None


@dataclass(eq=False)
class OfferDispatch(Command):
    """The dispatcher offers unit ``key`` to a session; the actor commits ``StepDispatched``
    and pushes the task, or gives the slot back if the offer is stale."""

    key: str
    attempt: int
    token: str
    worker_id: str
    session_id: str


@dataclass(eq=False)
class MarkUncertain(Command):
    """The session holding ``token`` was lost."""

    token: str
    reason: str


@dataclass(eq=False)
class ChildEnded(Command):
    """The child started for unit ``key`` ended."""

    key: str
    child_id: str
    status: str
    output: Any = None
    failure: ErrorInfo | None = None


@dataclass(eq=False)
class ChildNotStarted(Command):
    """The child ``child_id`` for unit ``key`` could not start."""

    key: str
    child_id: str
    message: str


@dataclass(eq=False)
class RunQuery(Command):
    """Evaluate a query; replies with its value."""

    name: str


@dataclass(eq=False)
class Describe(Command):
    """Reply with a snapshot of the execution (an ``ExecutionDetail``)."""


# -- the scheduler's ----------------------------------------------------------------------------
@dataclass(eq=False)
class CreateSchedule(Command):
    """Replies with ``(view, created)``."""

    spec: ScheduleSpec
    paused: bool


@dataclass(eq=False)
class DeleteSchedule(Command):
    """Replies with None."""

    schedule_id: str


@dataclass(eq=False)
class PauseSchedule(Command):
    """Pause (or, with ``paused=False``, resume); replies with the view."""

    schedule_id: str
    paused: bool


@dataclass(eq=False)
class TriggerSchedule(Command):
    """Fire an occurrence for the current second; replies with its execution id."""

    schedule_id: str


@dataclass(eq=False)
class ShowSchedules(Command):
    """Replies with the views of one schedule (``schedule_id``) or of all, by id."""

    schedule_id: str | None = None


@dataclass(eq=False)
class ReloadSchedules(Command):
    """Read every schedule from the store again (another server sharing it changed one, or
    this one took over a dead server's work)."""


@dataclass(eq=False)
class RemoteOffer(OfferDispatch):
    """A server sharing the store claimed unit ``key`` for one of its sessions: the actor
    commits ``StepDispatched`` naming that session and replies with the task for that server to
    push (None when the offer is stale)."""
