"""Prometheus metrics of one runtime, in their own registry (architecture.md, "Observability").

Counters and histograms are fed from each batch of events once it is durable, kept as plain
numbers on the trio thread and handed to prometheus-client at scrape time; gauges are read at
scrape time from the runtime's own state. Labels have bounded cardinality (workflow names,
statuses, outcomes, task names), never an execution id.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from ..history.events import Event
from ..history.state import ExecutionState

_FINISHED = {
    "WorkflowCompleted": "completed",
    "WorkflowFailed": "failed",
    "WorkflowCancelled": "cancelled",
    "WorkflowTimedOut": "timed_out",
    "WorkflowTerminated": "terminated",
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
    resident_executions: int
    workers_connected: int
    worker_sessions: int
    queue_depth: dict[str, int]  # task name -> units waiting for a worker
    actor_restarts: int
    quarantines: int
    store_commits: int
    store_batches: int
    store_events: int
    store_largest_batch: int
    units_waiting: dict[tuple[str, str, str], int] = field(default_factory=dict)
    # (task, version, reason) -> units waiting for a worker


class Counts:
    """A counter by label values. Increments happen on the trio thread only, so they take no
    lock (prometheus-client's ``Counter`` takes one per increment, and every event counts)."""

    def __init__(self, name: str, documentation: str, labels: Sequence[str]) -> None:
        self.name, self.documentation, self.labels = name, documentation, list(labels)
        self.values: dict[tuple[str, ...], float] = {}

    def inc(self, *labels: str) -> None:
        """Add one for ``labels``."""
        self.values[labels] = self.values.get(labels, 0.0) + 1

    def family(self) -> CounterMetricFamily:
        """The counter for exposition."""
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labels)
        for labels, value in sorted(self.values.items()):
            family.add_metric(list(labels), value)
        return family


class Latencies:
    """A histogram by label values, in seconds; lock-free like :class:`Counts`."""

    def __init__(
        self, name: str, documentation: str, labels: Sequence[str], bounds: Sequence[float]
    ) -> None:
        self.name, self.documentation, self.labels = name, documentation, list(labels)
        self.bounds = tuple(bounds)
        self._le = [repr(float(bound)) for bound in bounds] + ["+Inf"]
        self.series: dict[tuple[str, ...], list[float]] = {}  # bucket counts, then the sum
        if not self.labels:
            self._series(())

    def observe(self, seconds: float, *labels: str) -> None:
        """Count one observation of ``seconds`` for ``labels``."""
        series = self.series.get(labels) or self._series(labels)
        series[bisect.bisect_left(self.bounds, seconds)] += 1
        series[-1] += seconds

    def _series(self, labels: tuple[str, ...]) -> list[float]:
        series = self.series[labels] = [0.0] * (len(self.bounds) + 2)
        return series

    def family(self) -> HistogramMetricFamily:
        """The histogram for exposition (cumulative buckets, as Prometheus reads them)."""
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labels)
        for labels, series in sorted(self.series.items()):
            buckets = list(zip(self._le, itertools.accumulate(series[:-1]), strict=True))
            family.add_metric(list(labels), buckets, sum_value=series[-1])
        return family


class Metrics:
    """The runtime's metrics; :meth:`observe` after every durable batch, :meth:`render` to
    scrape."""

    def __init__(self, snapshot: Callable[[], Snapshot]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)  # everything is read at scrape
        self.started = Counts("orbit_executions_started", "Executions started.", ["workflow"])
        self.finished = Counts("orbit_executions_finished", "Executions finished, by status.",
                               ["workflow", "status"])  # fmt: skip
        self.steps = Counts("orbit_step_outcomes", "Unit outcomes (attempts and resolutions).",
                            ["workflow", "outcome"])  # fmt: skip
        self.purged = Counts("orbit_executions_purged", "Finished executions purged.", [])
        self.schedule_to_start = Latencies(
            "orbit_step_schedule_to_start_seconds", "From a unit scheduled to its dispatch.",
            ["workflow"], _LATENCY_BUCKETS,
        )  # fmt: skip
        self.start_to_close = Latencies(
            "orbit_step_start_to_close_seconds", "From a dispatch to its result.",
            ["workflow"], _LATENCY_BUCKETS,
        )  # fmt: skip
        self.commit_seconds = Latencies(
            "orbit_store_commit_seconds", "Time for one commit to become durable (group commit).",
            [], _LATENCY_BUCKETS,
        )  # fmt: skip
        accumulated: list[Counts | Latencies] = [
            self.started, self.finished, self.steps, self.schedule_to_start, self.start_to_close,
            self.commit_seconds, self.purged,
        ]  # fmt: skip
        self.registry.register(_Accumulated(accumulated))
        self.registry.register(_Gauges(snapshot))

    def committed(self, state: ExecutionState, batch: list[Event], seconds: float) -> None:
        """A batch became durable after ``seconds``: count it (a commit observer; the loop of
        :meth:`observe`, inlined: it runs on every commit)."""
        workflow = state.workflow
        for event in batch:
            count = _COUNTED.get(event.type)
            if count is not None:
                count(self, workflow, state, event)
        self.commit_seconds.observe(seconds)

    def observe(self, state: ExecutionState, batch: Iterable[Event]) -> None:
        """Count a durable batch of ``state``'s events."""
        workflow = state.workflow
        for event in batch:
            count = _COUNTED.get(event.type)  # one look-up per event (most count nothing)
            if count is not None:
                count(self, workflow, state, event)

    def _step_outcome(self, workflow: str, state: ExecutionState, event: Event) -> None:
        kind = event.type
        self.steps.inc(workflow, _STEP_OUTCOMES[kind])
        if kind not in ("StepSucceeded", "StepAttemptFailed"):
            return
        unit = state.units.get(getattr(event, "step", ""))
        if unit is not None and unit.dispatched_at_ms is not None:
            took = max(0, event.timestamp_ms - unit.dispatched_at_ms) / 1000
            self.start_to_close.observe(took, workflow)

    def _dispatched(self, workflow: str, state: ExecutionState, event: Event) -> None:
        unit = state.units.get(getattr(event, "step", ""))
        if unit is not None and unit.scheduled_at_ms:
            waited = max(0, event.timestamp_ms - unit.scheduled_at_ms) / 1000
            self.schedule_to_start.observe(waited, workflow)

    def _created(self, workflow: str, state: ExecutionState, event: Event) -> None:
        if getattr(event, "run", 1) == 1:
            self.started.inc(workflow)

    def _finished(self, workflow: str, state: ExecutionState, event: Event) -> None:
        self.finished.inc(workflow, _FINISHED[event.type])

    def render(self) -> bytes:
        """The Prometheus text exposition."""
        return generate_latest(self.registry)


_Count = Callable[[Metrics, str, ExecutionState, Event], None]
_COUNTED: dict[str, _Count] = {
    **dict.fromkeys(_STEP_OUTCOMES, Metrics._step_outcome),
    "StepDispatched": Metrics._dispatched,
    "WorkflowCreated": Metrics._created,
    **dict.fromkeys(_FINISHED, Metrics._finished),
}
"""What each counted event type adds to the metrics (a table: the other types cost one look-up)."""


class _Accumulated(Collector):
    """The counters and histograms, read at scrape time."""

    def __init__(self, metrics: list[Counts | Latencies]) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        for metric in self._metrics:
            yield metric.family()


class _Gauges(Collector):
    """Gauges and totals read from the runtime at scrape time."""

    def __init__(self, snapshot: Callable[[], Snapshot]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        s = self._snapshot()
        yield _gauge(
            "orbit_active_executions", "Executions running (in memory or passivated).",
            s.active_executions,
        )  # fmt: skip
        yield _gauge(
            "orbit_resident_executions", "Running executions with an actor in memory.",
            s.resident_executions,
        )  # fmt: skip
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
        waiting = GaugeMetricFamily(
            "orbit_units_waiting", "Units waiting for a worker, by task, version and why.",
            labels=["task", "version", "reason"],
        )  # fmt: skip
        for labels, count in sorted(s.units_waiting.items()):
            waiting.add_metric(list(labels), count)
        yield waiting
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
