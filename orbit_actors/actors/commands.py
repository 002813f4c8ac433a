"""The commands an execution actor takes from its mailbox, one at a time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..history.events import ErrorInfo
from ..mailbox import Command


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
class ReportResult(Command):
    """A worker's result for ``token``; replies with the Ack once it is durable."""

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
    """The child for unit ``key`` could not start."""

    key: str
    message: str


@dataclass(eq=False)
class RunQuery(Command):
    """Evaluate a query; replies with its value."""

    name: str


@dataclass(eq=False)
class Describe(Command):
    """Reply with a snapshot of the execution (see ``actors.views``)."""
