"""``ExecutionState``: what one run of an execution is, as a fold of its history.

The state holds facts only and knows nothing of the definition; the decider reads it together with
the definition. Besides the units and steps it keeps small indexes (units needing a decision, open
fan-outs, armed timers) that :mod:`.apply` maintains event by event, so deciding costs the same
whether the history is 100 or 100,000 events long.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from .events import EffectiveLimits, ErrorInfo, ParentRef, RerunOf, StartFlow

Role = Literal["main", "compensate", "handler"]
UnitStatus = Literal[
    "scheduled", "dispatched", "succeeded", "attempt_failed", "retry_wait", "failed",
    "uncertain", "skipped", "cancelled", "waiting",
]  # fmt: skip
StepStatus = Literal["pending", "running", "succeeded", "failed", "skipped", "cancelled"]
RunStatus = Literal[
    "running", "completed", "failed", "cancelled", "timed_out", "terminated", "continued_as_new"
]
AbortKind = Literal["failure", "cancel", "timeout", "limit"]

RESOLVED_UNIT: frozenset[str] = frozenset({"succeeded", "failed", "skipped", "cancelled"})
RESOLVED_STEP: frozenset[str] = frozenset({"succeeded", "failed", "skipped", "cancelled"})


@dataclass(frozen=True)
class UnitKey:
    """A parsed unit key: ``pick[3]``, ``compensate:charge``, ``handler:alert``."""

    key: str
    role: Role
    step_id: str
    index: int | None
    target: str | None

    @staticmethod
    @lru_cache(maxsize=4096)  # the same few keys recur in every execution of a definition
    def parse(key: str) -> UnitKey:
        """Parse ``key``; the target of ``compensate:X`` is the unit ``X``."""
        role: Role = "main"
        target = None
        body = key
        if key.startswith("compensate:"):
            role, target, body = "compensate", key[len("compensate:") :], key[len("compensate:") :]
        elif key.startswith("handler:"):
            role, body = "handler", key[len("handler:") :]
        index = None
        if body.endswith("]") and "[" in body:
            body, _, raw = body[:-1].partition("[")
            index = int(raw)
        return UnitKey(key, role, body, index, target)


@dataclass(slots=True, eq=False)
class Unit:
    """One unit of work: an attempt number, its tokens, where it is, and how it ended."""

    key: str
    role: Role
    step_id: str
    index: int | None
    target: str | None
    scheduled_seq: int
    status: UnitStatus = "scheduled"
    attempt: int = 0
    input: Any = None
    idempotency_key: str = ""
    redelivery: bool = False
    scheduled_at_ms: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    current_token: str | None = None
    session: str | None = None
    worker_id: str | None = None
    dispatched_at_ms: int | None = None
    deadline_ms: int | None = None
    start_by_ms: int | None = None
    next_attempt: int | None = None
    retry_at_ms: int | None = None
    fire_at_ms: int | None = None
    output: Any = None
    error: ErrorInfo | None = None

    @property
    def resolved(self) -> bool:
        """True once the unit succeeded, failed, was skipped or cancelled."""
        return self.status in RESOLVED_UNIT


@dataclass(slots=True, eq=False)
class StepRecord:
    """A step's aggregate over its units (one, or one per fan-out element)."""

    id: str
    role: Role
    status: StepStatus = "running"
    attempts: int = 0
    output: Any = None
    error: ErrorInfo | None = None
    items: list[Any] | None = None
    outputs: list[Any] | None = None
    next_index: int = 0
    succeeded: int = 0
    active: dict[str, None] = field(default_factory=dict)
    failed_element: str | None = None

    @property
    def resolved(self) -> bool:
        """True once the step succeeded, failed, was skipped or cancelled."""
        return self.status in RESOLVED_STEP

    def view(self) -> dict[str, Any]:
        """``{status, output, error, attempts}`` as expressions read it."""
        return {
            "status": self.status,
            "output": self.output if self.status == "succeeded" else None,
            "error": self.error.public() if self.error else None,
            "attempts": self.attempts,
        }


PENDING_VIEW: dict[str, Any] = {"status": "pending", "output": None, "error": None, "attempts": 0}


@dataclass(slots=True, eq=False)
class SignalRecord:
    """A received signal and, once taken, the unit that took it."""

    seq: int
    name: str
    payload: Any
    delivered_to: str | None = None


@dataclass(frozen=True)
class AbortMark:
    """Why a run aborts, when that is not a step failure: cancel, timeout or a limit."""

    seq: int
    kind: AbortKind
    reason: str


TimerKind = Literal["retry", "deadline", "timer", "start"]


@dataclass(order=True, frozen=True)
class TimerEntry:
    """An armed wake-up; ``ref`` tells whether it still applies (attempt number or token)."""

    due_ms: int
    order: int
    key: str = field(compare=False)
    kind: TimerKind = field(compare=False)
    ref: str | int | None = field(compare=False, default=None)


@dataclass(slots=True, eq=False, init=False)
class ExecutionState:
    """One run of an execution as its history made it. Build it with :func:`replay` or by
    applying events one by one with :func:`apply`."""

    execution_id: str
    workflow: str
    version: str
    definition_hash: str
    input: Any
    limits: EffectiveLimits | None
    parent: ParentRef | None
    schedule_id: str | None
    run: int
    flow: StartFlow | None  # priority and concurrency key, fixed at start
    created: bool
    started: bool
    started_at_ms: int | None
    closed_at_ms: int | None
    status: RunStatus
    finished: bool  # once the run has its terminal event: set with ``status`` by apply
    last_seq: int
    output: Any
    error: ErrorInfo | None
    cancel_reason: str | None
    paused: bool
    pause_reason: str | None
    terminate_reason: str | None
    rerun_of: RerunOf | None
    reused: dict[str, int]  # step id -> the run it came from
    next_input: Any
    units: dict[str, Unit]
    steps: dict[str, StepRecord]
    tokens: dict[str, str]
    token_workers: dict[str, str]
    signals: dict[int, SignalRecord]
    undelivered: dict[str, deque[int]]
    attention: dict[str, None]
    open_fanouts: dict[str, None]
    failing_fanouts: dict[str, None]
    inflight: dict[str, None]
    cleanup_inflight: dict[str, None]
    resolved_main: set[str]
    resolved_steps: set[str]  # main and handler steps
    settled_main: list[str]  # main steps, in the order they resolved
    looked: tuple[object, int] | None  # the decider's memo: see decide/decider.py
    succeeded_order: list[str]
    succeeded_position: dict[str, int]
    failed_steps: list[tuple[int, str]]
    abort_mark: AbortMark | None
    compensation_position: int | None
    last_compensation: str | None
    compensations_started: int
    compensation_failed: bool
    timers: list[TimerEntry]
    timer_order: int

    def __init__(self) -> None:
        # written out, not generated: a generated __init__ calls a factory for each of the
        # 18 containers, which cost as much as all the rest (16,200 instructions against 9,000)
        self.execution_id = ""
        self.workflow = ""
        self.version = ""
        self.definition_hash = ""
        self.input = None
        self.limits = None
        self.parent = None
        self.schedule_id = None
        self.run = 1
        self.flow = None
        self.created = False
        self.started = False
        self.started_at_ms = None
        self.closed_at_ms = None
        self.status = "running"
        self.finished = False
        self.last_seq = 0
        self.output = None
        self.error = None
        self.cancel_reason = None
        self.paused = False
        self.pause_reason = None
        self.terminate_reason = None
        self.rerun_of = None
        self.reused = {}
        self.next_input = None
        self.units = {}
        self.steps = {}
        self.tokens = {}
        self.token_workers = {}
        self.signals = {}
        self.undelivered = {}
        self.attention = {}
        self.open_fanouts = {}
        self.failing_fanouts = {}
        self.inflight = {}
        self.cleanup_inflight = {}
        self.resolved_main = set()
        self.resolved_steps = set()
        self.settled_main = []
        self.looked = None
        self.succeeded_order = []
        self.succeeded_position = {}
        self.failed_steps = []
        self.abort_mark = None
        self.compensation_position = None
        self.last_compensation = None
        self.compensations_started = 0
        self.compensation_failed = False
        self.timers = []
        self.timer_order = 0

    @property
    def event_count(self) -> int:
        """Events in this run so far (seq has no gaps)."""
        return self.last_seq

    def step_view(self, step_id: str) -> dict[str, Any]:
        """``steps.<id>`` as expressions read it (``pending`` before the step starts)."""
        record = self.steps.get(step_id)
        return record.view() if record else dict(PENDING_VIEW)

    def step_field(self, step_id: str, name: str) -> Any:
        """``steps.<id>.<name>``: one field of :meth:`step_view` without building the view;
        ``KeyError`` for a name the view does not have."""
        record = self.steps.get(step_id)
        if record is None:
            return PENDING_VIEW[name]
        if name == "output":
            return record.output if record.status == "succeeded" else None
        if name == "status":
            return record.status
        if name == "attempts":
            return record.attempts
        if name == "error":
            return record.error.public() if record.error else None
        raise KeyError(name)

    def execution_view(self) -> dict[str, Any]:
        """``execution`` as expressions read it."""
        return {
            "id": self.execution_id,
            "workflow": self.workflow,
            "version": self.version,
            "run": self.run,
            "parent_id": self.parent.execution_id if self.parent else None,
            "schedule_id": self.schedule_id,
            "started_at_ms": self.started_at_ms,
        }

    def idempotency_key(self, unit_key: str) -> str:
        """``<execution_id>/<run>/<unit key>``: the same for every attempt of a unit."""
        return f"{self.execution_id}/{self.run}/{unit_key}"

    def timer_applies(self, entry: TimerEntry) -> bool:
        """True while the state the timer was armed for still holds."""
        unit = self.units.get(entry.key)
        if unit is None:
            return False
        if entry.kind == "retry":
            return unit.status == "retry_wait" and unit.next_attempt == entry.ref
        if entry.kind == "deadline":
            return unit.status == "dispatched" and unit.current_token == entry.ref
        if entry.kind == "start":
            return unit.status == "scheduled" and unit.start_by_ms == entry.due_ms
        return unit.status == "waiting" and unit.fire_at_ms == entry.due_ms

    def arm(self, due_ms: int, key: str, kind: TimerKind, ref: str | int | None = None) -> None:
        """Arm a wake-up (used by apply)."""
        self.timer_order += 1
        heapq.heappush(self.timers, TimerEntry(due_ms, self.timer_order, key, kind, ref))

    def drop_spent_timers(self) -> None:
        """Pop timers that no longer apply off the top, so the top is the next real wake-up."""
        while self.timers and not self.timer_applies(self.timers[0]):
            heapq.heappop(self.timers)

    def due_timers(self, now_ms: int) -> list[TimerEntry]:
        """Armed timers due at ``now_ms`` that still apply, earliest first (no mutation)."""
        found: list[TimerEntry] = []
        stack = [0]
        heap = self.timers
        while stack:
            i = stack.pop()
            if i < len(heap) and heap[i].due_ms <= now_ms:
                if self.timer_applies(heap[i]):
                    found.append(heap[i])
                stack.extend((2 * i + 1, 2 * i + 2))
        found.sort()
        return found

    def next_timer_ms(self) -> int | None:
        """When the earliest armed timer is due, if any."""
        return self.timers[0].due_ms if self.timers else None
