"""Prometheus metrics of one runtime, in their own registry (architecture.md, "Observability").

Counters and histograms are fed from each batch of events once it is durable, kept as plain
numbers on the trio thread and handed to prometheus-client at scrape time; gauges are read at
scrape time from the runtime's own state. Labels have bounded cardinality (workflow names,
statuses, outcomes, task names), never an execution id.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from ..history.events import (
    Event,
    StepAttemptFailed,
    StepDispatched,
    StepSucceeded,
    WorkflowCreated,
)
from ..history.state import ExecutionState
from .commits import EventObserver

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
_BOUNDS = tuple(map(float, _LATENCY_BUCKETS))
"""The buckets' upper bounds as floats: bisecting a float among ints compares slower. Every
observation bisects these directly into a series bound once (a child of its histogram)."""


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
        self.bounds = tuple(map(float, bounds))  # a float bisects faster among floats
        self._le = [repr(float(bound)) for bound in bounds] + ["+Inf"]
        self.series: dict[tuple[str, ...], list[float]] = {}  # bucket counts, then the sum
        self.children: dict[str, list[float]] = {}  # the series of one label value, bound
        if not self.labels:
            self._series(())

    def observe(self, seconds: float, *labels: str) -> None:
        """Count one observation of ``seconds`` for ``labels``."""
        series = self.series.get(labels) or self._series(labels)
        series[bisect_left(self.bounds, seconds)] += 1
        series[-1] += seconds

    def child(self, label: str) -> list[float]:
        """The series of a histogram with one label, for ``label`` (observed into directly)."""
        series = self.children.get(label)
        if series is None:
            series = self.children[label] = self.series.get((label,)) or self._series((label,))
        return series

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
    """The runtime's metrics: :meth:`events` and :meth:`commit_took` observe every durable
    batch (through :func:`observe_commits`), :meth:`render` to scrape."""

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
        self._commit_series = self.commit_seconds.series[()]

    def events(self) -> dict[str, EventObserver]:
        """What each counted event type adds (a table for :func:`observe_commits`: the other
        types cost one look-up)."""
        return {
            **{kind: _by_workflow(self.steps, outcome) for kind, outcome in _STEP_OUTCOMES.items()},
            "StepSucceeded": self._closed("succeeded"),
            "StepAttemptFailed": self._closed("attempt_failed"),
            "StepDispatched": self._dispatched,
            "WorkflowCreated": self._created,
            **{kind: _by_workflow(self.finished, status) for kind, status in _FINISHED.items()},
        }

    def commit_took(self, state: ExecutionState, batch: list[Event], seconds: float) -> None:
        """A batch became durable after ``seconds`` (a commit observer)."""
        series = self._commit_series
        series[bisect_left(_BOUNDS, seconds)] += 1
        series[-1] += seconds

    def _closed(self, outcome: str) -> EventObserver:
        """An attempt's outcome that ends its dispatch: counted, and its start to close timed."""
        values, took = self.steps.values, self.start_to_close

        def count(state: ExecutionState, event: StepSucceeded | StepAttemptFailed) -> None:
            workflow = state.workflow
            labels = (workflow, outcome)
            values[labels] = values.get(labels, 0.0) + 1
            unit = state.units.get(event.step)
            if unit is not None and unit.dispatched_at_ms is not None:
                ms = event.timestamp_ms - unit.dispatched_at_ms
                seconds = ms / 1000 if ms > 0 else 0.0
                series = took.children.get(workflow) or took.child(workflow)
                series[bisect_left(_BOUNDS, seconds)] += 1  # inlined: a call costs as much
                series[-1] += seconds

        return count

    def _dispatched(self, state: ExecutionState, event: StepDispatched) -> None:
        unit = state.units.get(event.step)
        if unit is not None and unit.scheduled_at_ms:
            ms = event.timestamp_ms - unit.scheduled_at_ms
            waited = self.schedule_to_start
            seconds = ms / 1000 if ms > 0 else 0.0
            series = waited.children.get(state.workflow) or waited.child(state.workflow)
            series[bisect_left(_BOUNDS, seconds)] += 1
            series[-1] += seconds

    def _created(self, state: ExecutionState, event: WorkflowCreated) -> None:
        if event.run == 1:
            self.started.inc(state.workflow)

    def render(self) -> bytes:
        """The Prometheus text exposition."""
        return generate_latest(self.registry)


def _by_workflow(counts: Counts, label: str) -> EventObserver:
    """Add one to ``counts`` for the event's workflow and ``label``."""
    values = counts.values

    def count(state: ExecutionState, event: Event) -> None:
        labels = (state.workflow, label)
        values[labels] = values.get(labels, 0.0) + 1

    return count


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
