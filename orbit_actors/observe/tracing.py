"""OpenTelemetry traces built from durable history (architecture.md, "Observability").

Spans are made from each batch of events once it is committed, and only when what they cover has
ended, so nothing is exported that a crash could take back. Every id is derived from execution
ids, so a server that recovers an execution after a crash ends its spans with the ids the first
server would have used:

- one trace per top-level execution: ``trace_id`` from the top-level execution's id;
- a span per execution run (``workflow <name>``), from ``WorkflowCreated`` to its end;
- a span per unit attempt (``step <unit key>``: tasks, children, sleeps, awaits …), from its
  ``StepScheduled`` to ``StepSucceeded`` / ``StepAttemptFailed`` / ``StepCancelled`` (a
  redelivery continues the same attempt and span);
- a child execution's span is a child of its parent step's span, in the parent's trace.

Needs the ``otel`` extra (``pip install orbit-actors[otel]``); :func:`open_exporter` says so.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any, Protocol

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from .._version import __version__
from ..history import events as ev
from ..history.events import Event
from ..history.state import ExecutionState
from .commits import EventObserver

_RUN_ENDS = (ev.WorkflowCompleted, ev.WorkflowFailed, ev.WorkflowCancelled, ev.WorkflowTimedOut,
             ev.WorkflowTerminated, ev.WorkflowContinuedAsNew)  # fmt: skip
AttemptEnd = ev.StepSucceeded | ev.StepAttemptFailed | ev.StepCancelled
# Ended children whose parent is remembered: a grandchild cancelled because its parent aborted
# ends after that parent.
_REMEMBERED = 10_000
_SCOPE = InstrumentationScope("orbit_actors", __version__)


class SpanSink(Protocol):
    """Where finished spans go: an SDK span processor (``on_end``)."""

    def on_end(self, span: ReadableSpan) -> None:
        """Take one finished span."""
        ...

    def shutdown(self) -> None:
        """Flush and stop."""
        ...


def _id(size: int, *parts: object) -> int:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:size], "big") or 1  # 0 is the invalid id


def trace_id_of(top_level_id: str) -> int:
    """The trace id of a top-level execution (128 bits)."""
    return _id(16, "trace", top_level_id)


def execution_span_id(execution_id: str, run: int) -> int:
    """The span id of one run of an execution (64 bits)."""
    return _id(8, "run", execution_id, run)


def attempt_span_id(execution_id: str, run: int, key: str, attempt: int) -> int:
    """The span id of one attempt of a unit (64 bits)."""
    return _id(8, "attempt", execution_id, run, key, attempt)


def _ns(ms: int) -> int:
    return ms * 1_000_000


class Tracer:
    """Turns durable batches into finished spans; feed it through its :meth:`events` table."""

    def __init__(self, sink: SpanSink, service_name: str = "orbit") -> None:
        self._sink = sink
        self._resource = Resource.create({"service.name": service_name})
        self._parents: dict[str, str] = {}  # running child -> its parent
        self._ended: OrderedDict[str, str] = OrderedDict()  # ended child -> parent, the latest
        self._attempts: dict[str, dict[str, tuple[int, int]]] = {}  # id -> key -> (attempt, ms)

    def recovered(self, state: ExecutionState) -> None:
        """Note an execution recovered from history."""
        if state.parent is not None:
            self._parents[state.execution_id] = state.parent.execution_id

    def events(self) -> dict[str, EventObserver]:
        """What each event type that starts or ends a span does (a table for
        :func:`observe_commits`)."""
        return {
            "WorkflowCreated": self._created,
            "StepScheduled": self._start_attempt,
            **dict.fromkeys(
                ("StepSucceeded", "StepAttemptFailed", "StepCancelled"), self._end_attempt
            ),
            **{kind.__name__: self._end_run for kind in _RUN_ENDS},
        }

    def shutdown(self) -> None:
        """Export what is buffered and stop."""
        self._sink.shutdown()

    # -- spans -------------------------------------------------------------------------------
    def _created(self, state: ExecutionState, event: ev.WorkflowCreated) -> None:
        self.recovered(state)

    def _top_level(self, execution_id: str) -> str:
        while True:
            parent = self._parents.get(execution_id) or self._ended.get(execution_id)
            if parent is None:
                return execution_id
            execution_id = parent

    def _start_attempt(self, state: ExecutionState, event: ev.StepScheduled) -> None:
        attempts = self._attempts.setdefault(state.execution_id, {})
        if attempts.get(event.step, (0, 0))[0] != event.attempt:  # a redelivery: the same span
            attempts[event.step] = (event.attempt, event.timestamp_ms)

    def _context(self, state: ExecutionState, span_id: int) -> SpanContext:
        top = self._top_level(state.execution_id)
        return SpanContext(trace_id_of(top), span_id, is_remote=False,
                           trace_flags=TraceFlags(TraceFlags.SAMPLED))  # fmt: skip

    def _parent_of_run(self, state: ExecutionState) -> SpanContext | None:
        parent = state.parent
        if parent is None:
            return None
        # a child is started once, by the first attempt of its parent's unit
        span_id = attempt_span_id(parent.execution_id, _parent_run(state), parent.step, 1)
        return self._context(state, span_id)

    def _end_run(self, state: ExecutionState, event: Event) -> None:
        error = state.error
        attributes: dict[str, Any] = {
            "orbit.execution_id": state.execution_id, "orbit.workflow": state.workflow,
            "orbit.version": state.version, "orbit.run": state.run,
            "orbit.status": state.status,
        }  # fmt: skip
        if state.schedule_id is not None:
            attributes["orbit.schedule_id"] = state.schedule_id
        if error is not None:
            attributes["orbit.error.code"] = error.code
        failed = state.status in ("failed", "timed_out")
        self._emit(
            f"workflow {state.workflow}",
            self._context(state, execution_span_id(state.execution_id, state.run)),
            self._parent_of_run(state), attributes,
            state.started_at_ms or event.timestamp_ms, event.timestamp_ms,
            _status(failed, error.code if error else state.status),
        )  # fmt: skip
        self._attempts.pop(state.execution_id, None)
        parent = self._parents.pop(state.execution_id, None)
        if parent is not None:
            self._ended[state.execution_id] = parent
            if len(self._ended) > _REMEMBERED:
                self._ended.popitem(last=False)

    def _end_attempt(self, state: ExecutionState, event: AttemptEnd) -> None:
        key = event.step
        unit = state.units.get(key)
        if isinstance(event, ev.StepCancelled):  # it names no attempt: the current one
            attempt = unit.attempt if unit else 1
        else:
            attempt = event.attempt
        started = self._attempts.get(state.execution_id, {}).pop(key, None)
        start_ms = started[1] if started else (unit.scheduled_at_ms if unit else 0)
        attributes: dict[str, Any] = {
            "orbit.execution_id": state.execution_id, "orbit.step": key,
            "orbit.attempt": attempt, "orbit.outcome": _OUTCOME[type(event)],
        }  # fmt: skip
        if unit is not None and unit.worker_id:
            attributes["orbit.worker_id"] = unit.worker_id
        error = event.error if isinstance(event, ev.StepAttemptFailed) else None
        if error is not None:
            attributes["orbit.error.code"] = error.code
        span_id = attempt_span_id(state.execution_id, state.run, key, attempt)
        self._emit(
            f"step {key}",
            self._context(state, span_id),
            self._context(state, execution_span_id(state.execution_id, state.run)),
            attributes, start_ms or event.timestamp_ms, event.timestamp_ms,
            _status(error is not None, error.code if error else ""),
        )  # fmt: skip

    def _emit(
        self, name: str, context: SpanContext, parent: SpanContext | None,
        attributes: dict[str, Any], start_ms: int, end_ms: int, status: Status,
    ) -> None:  # fmt: skip
        span = ReadableSpan(
            name, context=context, parent=parent, resource=self._resource, attributes=attributes,
            kind=SpanKind.INTERNAL, status=status, start_time=_ns(start_ms),
            end_time=_ns(max(end_ms, start_ms)), instrumentation_scope=_SCOPE,
        )  # fmt: skip
        self._sink.on_end(span)


_OUTCOME: dict[type[Event], str] = {ev.StepSucceeded: "succeeded",
                                    ev.StepAttemptFailed: "failed",
                                    ev.StepCancelled: "cancelled"}  # fmt: skip


def _status(failed: bool, description: str) -> Status:
    return Status(StatusCode.ERROR, description) if failed else Status(StatusCode.UNSET)


def _parent_run(state: ExecutionState) -> int:
    """The parent's run that started this child: ``<parent>.run<N>.…`` ids carry it."""
    assert state.parent is not None
    rest = state.execution_id[len(state.parent.execution_id) + 1 :]
    head = rest.split(".", 1)[0]
    if head.startswith("run") and head[3:].isdigit():
        return int(head[3:])
    return 1


def open_exporter(endpoint: str) -> SpanSink:
    """A batching processor that sends spans to an OTLP/HTTP collector at ``endpoint``
    (``/v1/traces`` is added when the URL has no path)."""
    from urllib.parse import urlsplit

    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    if urlsplit(endpoint).path in ("", "/"):
        endpoint = endpoint.rstrip("/") + "/v1/traces"
    processor: SpanSink = BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint))
    return processor
