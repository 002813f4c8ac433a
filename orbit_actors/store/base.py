"""The ``Store`` contract the actors use, and the records it deals in.

Every store (the memory store of :mod:`orbit_actors.testing`, SQLite, PostgreSQL) meets the
same contract and runs the same test suite (``tests/store/contract.py``). A write returns only
once it is durable; a write that fails raises :class:`~orbit_actors.errors.StorageError` and
leaves nothing of itself visible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

from ..decide.invocation import RateTake
from ..errors import StorageError
from ..history.events import Event

if TYPE_CHECKING:  # batches.py builds on this module
    from .batches import BatchFailure, BatchFilter, BatchItem, BatchProgress, BatchRecord

PutOutcome = Literal["created", "unchanged", "conflict"]
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled", "timed_out", "terminated"})
EXECUTION_STATUSES = frozenset({"queued", "running", *TERMINAL_STATUSES})
KEPT_CLAIMS = 100
"""Fired occurrence claims kept per schedule; older ones are settled (the scheduler never fires
an occurrence at or before ``settled_ms``) and are deleted as new ones settle, so a schedule
firing every minute does not grow its store by half a million rows a year."""


@dataclass(frozen=True)
class DefinitionRecord:
    """One registered ``name@version``, its hash and its IR (as JSON text)."""

    name: str
    version: str
    definition_hash: str
    ir: str
    registered_at_ms: int


@dataclass(frozen=True)
class PutDefinition:
    """The answer to registering a definition: what happened, and the record now stored."""

    outcome: PutOutcome
    record: DefinitionRecord


@dataclass(slots=True)
class ExecutionRow:
    """The summary row of an execution, written with every commit of its events (a value:
    never changed once made; not frozen only because it is built on every commit)."""

    execution_id: str
    workflow: str
    version: str
    definition_hash: str
    status: str
    run: int
    started_at_ms: int
    closed_at_ms: int | None = None
    parent_id: str | None = None
    schedule_id: str | None = None
    last_seq: int = 0
    wake_at_ms: int | None = None  # when it next needs deciding on its own (decide/rest.py)
    busy: bool = True  # something in flight or ready: a restart brings it back at once
    paused: bool = False  # an operator paused it (operations.md, "Pause")
    flow_key: str | None = None  # its concurrency key, when its definition declares one


class WakeEntry(NamedTuple):
    """One running execution in the wake-up index: when it next needs deciding on its own,
    whether a restart must bring it back at once, and whether it is a root (no parent). A
    tuple: a restart reads one per running execution."""

    execution_id: str
    wake_at_ms: int | None
    busy: bool
    root: bool


@dataclass(frozen=True)
class ExecutionPage:
    """One page of executions, newest first, and the cursor of the next page (None at the end)."""

    executions: list[ExecutionRow]
    next_cursor: str | None


@dataclass(frozen=True)
class WorkerRecord:
    """A worker ever registered: what it announced and when it was last seen."""

    worker_id: str
    runtime: str
    sdk: str
    contracts: list[dict[str, str]]
    registered_at_ms: int
    last_seen_ms: int


@dataclass(frozen=True)
class ScheduleRecord:
    """A cron schedule; ``spec`` holds its fields as the API takes them (``paused`` apart).
    Occurrences at or before ``settled_ms`` are done with (fired, skipped, or passed while the
    schedule was paused); ``last_error`` says why the latest occurrence that could not start
    did not."""

    schedule_id: str
    spec: dict[str, Any]
    paused: bool
    created_at_ms: int
    settled_ms: int = 0
    last_error: str | None = None


@dataclass(frozen=True)
class Retention:
    """How long finished executions are kept after they closed: ``default_ms`` for every
    definition that says nothing (None: forever), ``by_hash`` for those that say their own
    (by definition hash)."""

    default_ms: int | None
    by_hash: dict[str, int] = field(default_factory=dict)


PurgeOutcome = Literal["purged", "running", "missing"]


@dataclass(frozen=True)
class Purged:
    """What purging one execution did: ``purged`` (``ids``: it and its finished descendants),
    or nothing because it is ``running`` or ``missing``."""

    outcome: PurgeOutcome
    ids: list[str] = field(default_factory=list)


PURGE_BATCH = 20
"""Executions a purge removes in one transaction (with their descendants): a few milliseconds
of the writer, so no commit waits long behind it."""


@dataclass(frozen=True, slots=True)
class Admission:
    """A commit that starts an execution under a concurrency key is admitted only while the
    key has fewer than ``limit`` running executions (counted in the commit's own transaction)
    and, for a new start, none queued ahead of it; ``promoting`` starts a queued one (the queue
    is its own); ``over_limit`` (``on_full: replace``) is admitted whatever the count.
    ``at_ms`` is the instant a new start claims (its ``WorkflowStarted``): a slot given back
    after it was still taken then, so it counts as running (the histories must never show more
    than ``limit`` running at any instant)."""

    key: str
    limit: int
    promoting: bool = False
    over_limit: bool = False
    at_ms: int | None = None


@dataclass(frozen=True, slots=True)
class RateCharge:
    """A dispatch a commit records (its ``StepDispatched`` at ``at_ms``) counted against its
    task's rate limit (``store/rate_log.py``)."""

    take: RateTake
    at_ms: int


@dataclass(slots=True)
class Commit:
    """The events of one execution to append, with its summary row. With ``rollover``, run
    ``row.run - 1`` is archived and ``events`` are the first events of run ``row.run``. With
    ``create``, the commit starts a new execution and is refused with :class:`AlreadyStored`
    (nothing written, nobody else's commit disturbed) when the id is taken. With ``admit``, it
    is refused with :class:`ConcurrencyFull` (nothing written) when its key is full. With
    ``rates``, it is refused with :class:`RateLimited` (nothing written) when one of its
    dispatches would pass its rate limit, counted in the commit's own transaction."""

    row: ExecutionRow
    events: list[Event]
    rollover: bool = False
    create: bool = False
    admit: Admission | None = None
    rates: tuple[RateCharge, ...] = ()


@dataclass(frozen=True)
class FlowSlots:
    """The executions of one concurrency key that hold or wait for a slot, oldest first."""

    running: list[str]
    queued: list[str]


class ConcurrencyFull(Exception):
    """An admitted commit's concurrency key had no free slot (or others queued ahead)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"concurrency key `{key}` is full")
        self.key = key


class RateLimited(Exception):
    """A commit's dispatch would pass its task's rate limit: nothing of the commit was written;
    a dispatch of ``task`` for ``key`` is allowed again from ``opens_at_ms`` on."""

    def __init__(self, task: str, key: str, opens_at_ms: int) -> None:
        super().__init__(f"task `{task}` is over its rate limit for key `{key}`")
        self.task, self.key, self.opens_at_ms = task, key, opens_at_ms


class StoreOpenError(StorageError):
    """The database cannot be used; the message names it and says what to do."""


class AlreadyStored(Exception):
    """A ``create`` commit named an execution id the store already holds."""

    def __init__(self, execution_id: str) -> None:
        super().__init__(f"execution `{execution_id}` is already stored")
        self.execution_id = execution_id


@dataclass
class StoreStatistics:
    """Counters of the store (exposed as metrics later)."""

    commits: int = 0
    batches: int = 0
    events: int = 0
    largest_batch: int = 0
    last_batch: int = 0


class Store(Protocol):
    """What the actors need of a store. All methods are async and never block the trio loop."""

    async def put_definition(self, record: DefinitionRecord) -> PutDefinition:
        """Register a definition: created, unchanged (same hash) or conflict (another hash)."""
        ...

    async def definitions(self) -> list[DefinitionRecord]:
        """Every registered definition, in registration order."""
        ...

    async def commit(self, commit: Commit) -> None:
        """Append events (and the summary row) atomically; returns once durable."""
        ...

    async def history(self, execution_id: str, run: int | None = None) -> list[Event]:
        """The events of the current run, or of run ``run`` (empty when there is none)."""
        ...

    async def execution(self, execution_id: str) -> ExecutionRow | None:
        """The summary row of an execution."""
        ...

    async def running_ids(self) -> list[str]:
        """Ids of every execution that has not finished."""
        ...

    async def wake_index(self, due_by_ms: int | None = None) -> list[WakeEntry]:
        """The wake-up index: every execution that has not finished, oldest first. With
        ``due_by_ms``, only what a restart needs before it serves: the busy ones and those
        whose wake-up comes by then."""
        ...

    async def wake_index_page(self, after: int, limit: int) -> tuple[list[WakeEntry], int]:
        """The whole wake-up index a page at a time, oldest first: up to ``limit`` entries
        after the position ``after`` (0 at first), and the position to ask after next. An
        empty page is the end."""
        ...

    async def histories(self, execution_ids: list[str]) -> dict[str, list[Event]]:
        """The current run's events of each execution, read together (ids not stored are
        left out)."""
        ...

    async def history_segments(self, execution_ids: list[str]) -> dict[str, list[str]]:
        """Like :meth:`histories`, undecoded: each current run's events as JSON arrays (one per
        commit), for a reader that decodes them elsewhere (the upgrade check's process)."""
        ...

    async def list_executions(
        self,
        *,
        status: str | None = None,
        workflow: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        paused: bool | None = None,
    ) -> ExecutionPage:
        """Executions newest first, filtered; ``limit`` is clamped to 1..1000."""
        ...

    async def count_by_status(self) -> dict[str, int]:
        """How many executions have each status."""
        ...

    async def flow_slots(self, key: str, queued_limit: int | None = None) -> FlowSlots:
        """The running and queued executions of concurrency key ``key``, oldest first (the
        first ``queued_limit`` queued ones only, when given: a key may have many)."""
        ...

    async def queued_keys(self) -> list[str]:
        """Every concurrency key with queued executions."""
        ...

    async def upsert_worker(self, record: WorkerRecord) -> None:
        """Record a registration (keeps the first ``registered_at_ms``)."""
        ...

    async def touch_worker(self, worker_id: str, now_ms: int) -> None:
        """Note that a worker was seen; written at most once a second per worker."""
        ...

    async def workers(self) -> list[WorkerRecord]:
        """Every worker ever registered."""
        ...

    async def put_schedule(self, record: ScheduleRecord) -> PutOutcome:
        """Create a schedule: created, unchanged (same fields) or conflict."""
        ...

    async def schedule(self, schedule_id: str) -> ScheduleRecord | None:
        """One schedule."""
        ...

    async def schedules(self) -> list[ScheduleRecord]:
        """Every schedule."""
        ...

    async def delete_schedule(self, schedule_id: str) -> bool:
        """Delete a schedule (and its claims); False when there was none."""
        ...

    async def set_schedule_paused(self, schedule_id: str, paused: bool, now_ms: int) -> bool:
        """Pause or resume a schedule; resuming settles what passed until ``now_ms`` (what was
        missed while paused never fires). False when there is none."""
        ...

    async def claim_occurrence(
        self, schedule_id: str, occurrence_ms: int, owner: str, now_ms: int
    ) -> bool:
        """Claim one occurrence before firing it: True for exactly one claimer (while the claim
        is kept: see :data:`KEPT_CLAIMS`)."""
        ...

    async def settle_occurrence(
        self, schedule_id: str, occurrence_ms: int, execution_id: str | None, error: str | None
    ) -> None:
        """An occurrence is done with: it started ``execution_id`` (recorded on its claim, and
        the schedule's last error cleared) or it did not start (``error`` says why, if that is
        an error; its claim is then given back). Either way the schedule is settled up to it.
        Fired claims beyond the newest :data:`KEPT_CLAIMS` of the schedule are deleted."""
        ...

    async def occurrence_executions(
        self, limit: int, schedule_id: str | None = None
    ) -> dict[str, list[str]]:
        """By schedule (every one, or ``schedule_id`` only), the executions its latest
        ``limit`` fired occurrences started, newest first; one read for all."""
        ...

    async def purge(self, execution_id: str) -> Purged:
        """Delete a finished execution now: its row, history and runs, and those of its
        finished descendants; the id may then be used again."""
        ...

    async def purge_due(self, retention: Retention, now_ms: int, limit: int) -> list[str]:
        """Purge up to ``limit`` executions closed more than their retention before
        ``now_ms`` (roots, and children whose parent is gone), each with its finished
        descendants, in one transaction; returns every id purged (empty: nothing is due)."""
        ...

    async def reclaim(self) -> None:
        """Give the space purges freed back for reuse (what the engine needs, if anything)."""
        ...

    async def release_claims(self, except_owner: str) -> int:
        """Release claims of other (dead) processes that never fired; returns how many."""
        ...

    # -- batches (store/batches.py) --------------------------------------------------------
    async def create_batch(self, record: BatchRecord) -> int:
        """Store a batch (``running``, or ``completed`` when nothing matched) with the snapshot
        of the executions its filter matches, oldest first, in one transaction; the count."""
        ...

    async def batch_matches(self, flt: BatchFilter) -> tuple[int, list[str]]:
        """How many executions ``flt`` matches now, and the first 20 ids (writes nothing)."""
        ...

    async def batch(self, batch_id: str) -> BatchRecord | None:
        """One batch."""
        ...

    async def batches(
        self, limit: int = 100, cursor: str | None = None
    ) -> tuple[list[BatchRecord], str | None]:
        """Batches newest first, a page at a time, and the cursor of the next page."""
        ...

    async def batch_items(self, batch_id: str, start: int, limit: int) -> list[BatchItem]:
        """Up to ``limit`` items of a batch's snapshot from position ``start`` on."""
        ...

    async def batch_failures(self, batch_id: str, limit: int) -> list[BatchFailure]:
        """The first ``limit`` executions a batch could not act on, in the batch's order."""
        ...

    async def mark_batch_doubt(self, batch_id: str, until: int) -> bool:
        """Items before ``until`` may be acted on from now on; False (nothing written) when
        the batch no longer runs."""
        ...

    async def advance_batch(self, batch_id: str, progress: BatchProgress, now_ms: int) -> str:
        """Commit the outcome of one page (once: a page already committed changes nothing),
        completing the batch after its last; its state after."""
        ...

    async def cancel_batch(self, batch_id: str, now_ms: int) -> str | None:
        """Cancel a running batch; its state after (None: there is no such batch)."""
        ...

    async def claim_batches(self, owner: str, from_owners: list[str] | None) -> list[str]:
        """Make ``owner`` the owner of the running batches of ``from_owners`` (None: of every
        running batch); their ids, oldest first."""
        ...

    def statistics(self) -> StoreStatistics:
        """Commit counters."""
        ...
