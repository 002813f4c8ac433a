"""Orbit's one error tree. Every error a caller can see is an :class:`OrbitError` with a stable
API ``code``, the HTTP ``status`` it maps to, and a message a person can act on.

::

    OrbitError
    ├── DefinitionError            INVALID_IR              400  (``problems`` says where and why)
    │   └── ChildNotRegisteredError CHILD_NOT_REGISTERED   400
    ├── DefinitionConflictError    DEFINITION_CONFLICT     409
    ├── WorkflowNotFoundError      WORKFLOW_NOT_FOUND      404
    ├── InvalidInputError          INVALID_INPUT           400
    ├── FlowKeyError               FLOW_KEY_ERROR          400  (a concurrency key at start)
    ├── ConcurrencyLimitError      CONCURRENCY_LIMIT       409  (``on_full: skip``)
    ├── ExecutionQueuedError       EXECUTION_QUEUED        409  (waits for a concurrency slot)
    ├── InvalidExecutionIdError    INVALID_EXECUTION_ID    400
    ├── InvalidRequestError        INVALID_REQUEST         400
    ├── ExecutionExistsError       EXECUTION_EXISTS        409
    ├── ExecutionNotFoundError     NOT_FOUND               404
    ├── RunNotFoundError           RUN_NOT_FOUND           404
    ├── ExecutionFinishedError     EXECUTION_FINISHED      409
    ├── ExecutionRunningError      EXECUTION_RUNNING       409  (finish it first)
    ├── NotQuarantinedError        NOT_QUARANTINED         409
    ├── UnknownSignalError         UNKNOWN_SIGNAL          404
    ├── SignalPayloadInvalidError  SIGNAL_PAYLOAD_INVALID  422
    ├── UnknownQueryError          UNKNOWN_QUERY           404
    ├── QueryFailedError           QUERY_FAILED            422
    ├── PayloadTooLargeError       PAYLOAD_TOO_LARGE       413
    ├── ResourceExhaustedError     RESOURCE_EXHAUSTED      429
    ├── WaitTimeoutError           WAIT_TIMEOUT            408
    ├── InvalidScheduleError       INVALID_SCHEDULE        400  (names the field)
    ├── ScheduleExistsError        SCHEDULE_EXISTS         409
    ├── ScheduleNotFoundError      SCHEDULE_NOT_FOUND      404
    ├── OverlapSkippedError        OVERLAP_SKIPPED         409
    ├── BatchNotFoundError         BATCH_NOT_FOUND         404
    ├── BatchFinishedError         BATCH_FINISHED          409  (cancel of a completed batch)
    ├── ForbiddenError             FORBIDDEN               403
    ├── UnauthenticatedError       UNAUTHENTICATED         401
    ├── StorageError               STORAGE_ERROR           503
    │   ├── OwnershipLostError     STORAGE_ERROR           503  (another server owns it now)
    │   └── LeaseLostError         STORAGE_ERROR           503  (this server was taken over)
    ├── OwnerUnavailableError      OWNER_UNAVAILABLE       503  (its owner did not answer)
    ├── ForwardedError             (the owner's code)           (an error its owner answered)
    ├── QuarantinedError           QUARANTINED             409  (resume it first)
    ├── ActorGoneError             INTERNAL                500  (mapped before callers see it)
    │   ├── ActorCrashedError      INTERNAL                500  (the command was being handled)
    │   └── NotHereError           INTERNAL                500  (it runs on another server)
    ├── MailboxFullError           RESOURCE_EXHAUSTED      429
    └── InternalError              INTERNAL                500

Messages follow ../shared/spec: the text the spec quotes is fixed, what follows a ``…`` is free.
"""

from __future__ import annotations

from dataclasses import dataclass


class OrbitError(Exception):
    """Base of every error Orbit reports to a caller: ``code``, ``status`` and ``message``."""

    code = "INTERNAL"
    status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_body(self) -> dict[str, dict[str, str]]:
        """The HTTP error body: ``{"error": {"code", "message"}}``."""
        return {"error": {"code": self.code, "message": self.message}}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a definition: where (file, line, column, field path) and why."""

    path: str
    reason: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    near: str | None = None
    """The text the problem is about (a misspelt name), for a caret under it in the source."""

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file + ":"
        if self.line is not None:
            where += f"{self.line}:{self.column or 1}:"
        lead = f"{where} " if where else ""
        return f"{lead}{self.path}: {self.reason}" if self.path else f"{lead}{self.reason}"


class DefinitionError(OrbitError):
    """A definition failed validation; ``problems`` lists every finding, each with its path."""

    code = "INVALID_IR"
    status = 400

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems) or "invalid definition")


class ChildNotRegisteredError(DefinitionError):
    """A workflow starts a child definition that the registry does not hold."""

    code = "CHILD_NOT_REGISTERED"

    def __init__(self, message: str) -> None:
        super().__init__([Problem(path="", reason=message)])
        self.message = message
        self.args = (message,)


class DefinitionConflictError(OrbitError):
    """The same name@version is registered with another definition hash."""

    code, status = "DEFINITION_CONFLICT", 409


class WorkflowNotFoundError(OrbitError):
    """No registered definition answers to the name (and version) asked for."""

    code, status = "WORKFLOW_NOT_FOUND", 404


class CandidateNameMismatchError(OrbitError):
    """A candidate definition checked against a workflow is a version of another workflow."""

    code, status = "CANDIDATE_NAME_MISMATCH", 400


class SeqOutOfRangeError(OrbitError):
    """A replay asked for an event the run does not have; the message gives the run's range."""

    code, status = "SEQ_OUT_OF_RANGE", 400


class InvalidInputError(OrbitError):
    """An execution's input does not match the workflow's input schema."""

    code, status = "INVALID_INPUT", 400


class FlowKeyError(OrbitError):
    """A flow key evaluated, at start, to something other than a string or a number."""

    code, status = "FLOW_KEY_ERROR", 400


class ConcurrencyLimitError(OrbitError):
    """A start beyond its concurrency key's limit, with ``on_full: skip``: nothing created."""

    code, status = "CONCURRENCY_LIMIT", 409


class ExecutionQueuedError(OrbitError):
    """The execution is queued for a slot of its concurrency key: it takes signals, queries
    and results once it starts (a cancel drops it)."""

    code, status = "EXECUTION_QUEUED", 409

    def __init__(self, execution_id: str) -> None:
        super().__init__(
            f"execution `{execution_id}` is queued: it waits for a slot of its concurrency key "
            "and takes signals once it starts (cancel it to drop it)"
        )


class InvalidExecutionIdError(OrbitError):
    """An execution id is empty, too long, or uses characters outside ``A-Za-z0-9-_.:``."""

    code, status = "INVALID_EXECUTION_ID", 400


class InvalidRequestError(OrbitError):
    """A request body or parameter is malformed; the message names the field."""

    code, status = "INVALID_REQUEST", 400


class ExecutionExistsError(OrbitError):
    """An execution id is taken by an execution of another definition."""

    code, status = "EXECUTION_EXISTS", 409


class ExecutionNotFoundError(OrbitError):
    """No execution has this id."""

    code, status = "NOT_FOUND", 404

    def __init__(self, message: str = "execution not found") -> None:
        super().__init__(message)


class RunNotFoundError(OrbitError):
    """The execution has no run with the number asked for."""

    code, status = "RUN_NOT_FOUND", 404


class ExecutionRunningError(OrbitError):
    """The execution has not finished, so it cannot be deleted or rerun (cancel or terminate it
    first)."""

    code, status = "EXECUTION_RUNNING", 409

    def __init__(self, execution_id: str) -> None:
        super().__init__(f"execution `{execution_id}` is running; cancel or terminate it first")


class ExecutionFinishedError(OrbitError):
    """The execution already ended, so it takes no signal or cancel."""

    code, status = "EXECUTION_FINISHED", 409

    def __init__(self, status_name: str) -> None:
        super().__init__(f"execution is already {status_name}")


class NotQuarantinedError(OrbitError):
    """Only a quarantined execution can be resumed."""

    code, status = "NOT_QUARANTINED", 409


class NotPausedError(OrbitError):
    """Only a paused execution can be unpaused."""

    code, status = "NOT_PAUSED", 409


class UnknownStepError(OrbitError):
    """A rerun named a step the definition does not have."""

    code, status = "UNKNOWN_STEP", 400


class FromStepRequiredError(OrbitError):
    """A rerun of a completed execution must say which step to rerun from."""

    code, status = "FROM_STEP_REQUIRED", 400


class RunCompensatedError(OrbitError):
    """A rerun would reuse a step whose effects the previous run compensated."""

    code, status = "RUN_COMPENSATED", 409


class UnknownSignalError(OrbitError):
    """The workflow declares no signal of this name."""

    code, status = "UNKNOWN_SIGNAL", 404


class SignalPayloadInvalidError(OrbitError):
    """A signal's payload does not match the signal's schema."""

    code, status = "SIGNAL_PAYLOAD_INVALID", 422


class UnknownQueryError(OrbitError):
    """The workflow declares no query of this name."""

    code, status = "UNKNOWN_QUERY", 404


class QueryFailedError(OrbitError):
    """A query's expression failed against the execution's state."""

    code, status = "QUERY_FAILED", 422


class PayloadTooLargeError(OrbitError):
    """A payload is over the byte limit; nothing was recorded."""

    code, status = "PAYLOAD_TOO_LARGE", 413


class ResourceExhaustedError(OrbitError):
    """A server-wide limit (active executions) refuses the request."""

    code, status = "RESOURCE_EXHAUSTED", 429


class WaitTimeoutError(OrbitError):
    """A wait ended before the execution finished."""

    code, status = "WAIT_TIMEOUT", 408


class InvalidScheduleError(OrbitError):
    """A schedule's cron, time zone, id or overlap is malformed; the message names the field."""

    code, status = "INVALID_SCHEDULE", 400


class ScheduleExistsError(OrbitError):
    """A schedule id is taken by a schedule with other fields."""

    code, status = "SCHEDULE_EXISTS", 409


class ScheduleNotFoundError(OrbitError):
    """No schedule has this id."""

    code, status = "SCHEDULE_NOT_FOUND", 404


class OverlapSkippedError(OrbitError):
    """A triggered occurrence was skipped: the previous one still runs and overlap is skip."""

    code, status = "OVERLAP_SKIPPED", 409


class BatchNotFoundError(OrbitError):
    """No batch has this id."""

    code, status = "BATCH_NOT_FOUND", 404

    def __init__(self, batch_id: str) -> None:
        super().__init__(f"no batch has the id `{batch_id}`; `orbit batch list` shows them")


class BatchFinishedError(OrbitError):
    """A batch that completed cannot be cancelled."""

    code, status = "BATCH_FINISHED", 409

    def __init__(self, batch_id: str) -> None:
        super().__init__(f"batch `{batch_id}` has already completed; there is nothing to cancel")


class ForbiddenError(OrbitError):
    """The caller is authenticated but may not do this (another worker's token)."""

    code, status = "FORBIDDEN", 403


class UnauthenticatedError(OrbitError):
    """A token is missing or wrong."""

    code, status = "UNAUTHENTICATED", 401


class StorageError(OrbitError):
    """The store could not commit or read; nothing of the failed commit is visible."""

    code, status = "STORAGE_ERROR", 503


class OwnershipLostError(StorageError):
    """A commit was refused because another server owns the execution now (it took it over
    when this server's lease expired): nothing of the commit was written, and this server's
    actor of the execution stops."""

    def __init__(self, execution_id: str) -> None:
        super().__init__(
            f"execution `{execution_id}` is owned by another server now (this server's lease "
            "expired and it was taken over); nothing was written"
        )
        self.execution_id = execution_id


class LeaseLostError(StorageError):
    """This server's lease was taken over by another server: it must stop serving."""


class OwnerUnavailableError(OrbitError):
    """A command for an execution owned by another server was forwarded and not answered in
    time; the message says whether it may have been carried out."""

    code, status = "OWNER_UNAVAILABLE", 503


class ForwardedError(OrbitError):
    """An error the owning server answered to a forwarded command, with the owner's code and
    status, so the caller sees what it would have seen on the owner."""

    def __init__(self, code: str, status: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class QuarantinedError(OrbitError):
    """The execution is quarantined after crashing too often; it takes no command until resumed."""

    code, status = "QUARANTINED", 409


class ActorGoneError(OrbitError):
    """The actor a command was sent to has finished or crashed; the command was not handled."""

    code, status = "INTERNAL", 500

    def __init__(self, name: str, why: str = "finished") -> None:
        super().__init__(f"the actor of {name} is gone ({why})")
        self.name = name
        self.why = why


class ActorCrashedError(ActorGoneError):
    """The actor crashed while it handled the command; the supervisor respawns it."""

    def __init__(self, name: str, error: BaseException) -> None:
        super().__init__(name, f"crashed: {error!r}")


class NotHereError(ActorGoneError):
    """The execution runs, but on another server (several servers share the store): the
    command is forwarded to its owner."""

    def __init__(self, execution_id: str) -> None:
        super().__init__(f"execution `{execution_id}`", "it runs on another server")
        self.execution_id = execution_id


class MailboxFullError(OrbitError):
    """The actor's mailbox is full; the sender should slow down and try again."""

    code, status = "RESOURCE_EXHAUSTED", 429

    def __init__(self, name: str) -> None:
        super().__init__(f"the mailbox of {name} is full; try again shortly")
        self.name = name


class InternalError(OrbitError):
    """A bug: logged with a traceback, never shown in detail to the caller."""

    code, status = "INTERNAL", 500
