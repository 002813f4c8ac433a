"""Prometheus metrics of one runtime, in their own registry (architecture.md, "Observability").

Counters and histograms are fed from each batch of events once it is durable; gauges are read
at scrape time from the runtime's own state. Labels have bounded cardinality (workflow names,
statuses, outcomes, task names), never an execution id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..history.events import Event
from ..history.state import ExecutionState

_FINISHED = {
    "WorkflowCompleted": "completed",
    "WorkflowFailed": "failed",
    "WorkflowCancelled": "cancelled",
    "WorkflowTimedOut": "timed_out",
}
_STEP_OUTCOMES = {
    "StepSucceeded": "succeeded",
    "StepFailed": "failed",
    "StepAttemptFailed": "attempt_failed",
    "StepAttemptUncertain": "uncertain",
    "StepCancelled": "cancelled",
    "StepSkipped": "skipped",
}
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
                    60, 300, 900, 3600)  # fmt: skip


@dataclass(frozen=True)
class Snapshot:
    """What the gauges show, read from the runtime when scraped."""

    active_executions: int
    quarantined_executions: int
    workers_connected: int
    worker_sessions: int
    queue_depth: dict[str, int]  # task name -> units waiting for a worker
    actor_restarts: int
    quarantines: int
    store_commits: int
    store_batches: int
    store_events: int
    store_largest_batch: int


class Metrics:
    """The runtime's metrics; :meth:`observe` after every durable batch, :meth:`render` to
    scrape."""

    def __init__(self, snapshot: Callable[[], Snapshot]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)  # gauges are read at scrape only
        r = self.registry
        self.started = Counter("orbit_executions_started", "Executions started.",
                               ["workflow"], registry=r)  # fmt: skip
        self.finished = Counter("orbit_executions_finished", "Executions finished, by status.",
                                ["workflow", "status"], registry=r)  # fmt: skip
        self.steps = Counter("orbit_step_outcomes", "Unit outcomes (attempts and resolutions).",
                             ["workflow", "outcome"], registry=r)  # fmt: skip
        self.schedule_to_start = Histogram(
            "orbit_step_schedule_to_start_seconds", "From a unit scheduled to its dispatch.",
            ["workflow"], buckets=_LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.start_to_close = Histogram(
            "orbit_step_start_to_close_seconds", "From a dispatch to its result.",
            ["workflow"], buckets=_LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.commit_seconds = Histogram(
            "orbit_store_commit_seconds", "Time for one commit to become durable (group commit).",
            buckets=_LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        r.register(_Gauges(snapshot))
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}

    def observe(self, state: ExecutionState, batch: Iterable[Event]) -> None:
        """Count a durable batch of ``state``'s events."""
        workflow = state.workflow
        for event in batch:
            kind = event.type
            if kind in _STEP_OUTCOMES:
                self._child(self.steps, workflow, _STEP_OUTCOMES[kind]).inc()
                if kind in ("StepSucceeded", "StepAttemptFailed"):
                    self._start_to_close(state, event)
            elif kind == "StepDispatched":
                unit = state.units.get(getattr(event, "step", ""))
                if unit is not None and unit.scheduled_at_ms:
                    waited = max(0, event.timestamp_ms - unit.scheduled_at_ms) / 1000
                    self._child(self.schedule_to_start, workflow).observe(waited)
            elif kind == "WorkflowCreated" and getattr(event, "run", 1) == 1:
                self._child(self.started, workflow).inc()
            elif kind in _FINISHED:
                self._child(self.finished, workflow, _FINISHED[kind]).inc()

    def _child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, remembered: ``labels`` takes a lock and builds a key on
        every call, and each event asks for one."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def _start_to_close(self, state: ExecutionState, event: Event) -> None:
        unit = state.units.get(getattr(event, "step", ""))
        if unit is not None and unit.dispatched_at_ms is not None:
            took = max(0, event.timestamp_ms - unit.dispatched_at_ms) / 1000
            self._child(self.start_to_close, state.workflow).observe(took)

    def render(self) -> bytes:
        """The Prometheus text exposition."""
        return generate_latest(self.registry)


class _Gauges(Collector):
    """Gauges and totals read from the runtime at scrape time."""

    def __init__(self, snapshot: Callable[[], Snapshot]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        s = self._snapshot()
        yield _gauge(
            "orbit_active_executions", "Executions with a live actor.", s.active_executions
        )
        yield _gauge("orbit_quarantined_executions", "Executions quarantined (repeated crashes).",
                     s.quarantined_executions)  # fmt: skip
        yield _gauge("orbit_workers_connected", "Worker sessions with a live connection.",
                     s.workers_connected)  # fmt: skip
        yield _gauge("orbit_worker_sessions", "Worker sessions alive (connected or resumable).",
                     s.worker_sessions)  # fmt: skip
        depth = GaugeMetricFamily("orbit_task_queue_depth", "Units waiting for a worker, by task.",
                                  labels=["task"])  # fmt: skip
        for task, count in sorted(s.queue_depth.items()):
            depth.add_metric([task], count)
        yield depth
        yield _counter("orbit_actor_restarts", "Execution actors respawned after a crash.",
                       s.actor_restarts)  # fmt: skip
        yield _counter("orbit_actor_quarantines", "Executions quarantined.", s.quarantines)
        yield _counter("orbit_store_commits", "Commits made durable.", s.store_commits)
        yield _counter("orbit_store_batches", "Group-commit transactions (commits / batches is the "
                       "mean batch size).", s.store_batches)  # fmt: skip
        yield _counter("orbit_store_events", "Events appended.", s.store_events)
        yield _gauge("orbit_store_largest_batch", "The largest group-commit batch so far.",
                     s.store_largest_batch)  # fmt: skip


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _counter(name: str, documentation: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, documentation, value=value)
