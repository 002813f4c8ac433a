"""The one commit observer the runtime calls: every durable batch goes through it, in order.

Most observers (metrics, the event log) care about a few event types each. They hand in a table
(event type -> what to do with one such event); the tables are merged once, so each event of a
batch costs one look-up, and a type no observer reads costs nothing more. Observers of the whole
batch (the commit's duration, traces) follow the events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..history.events import Event
from ..history.state import ExecutionState

CommitObserver = Callable[[ExecutionState, list[Event], float], None]
"""Told of each batch once it is durable: the state, its events, the seconds the commit took."""

EventObserver = Callable[[ExecutionState, Any], None]
"""Told of one durable event of the type its table files it under (so it knows the class)."""


def observe_commits(
    tables: Iterable[Mapping[str, EventObserver]], *batches: CommitObserver
) -> CommitObserver:
    """One observer: each event goes to what ``tables`` file under its type (in the order of
    ``tables``), then the whole batch to each of ``batches`` in turn."""
    table = merge_tables(tables)
    after = _batch_chain(batches)

    def committed(state: ExecutionState, events: list[Event], seconds: float) -> None:
        for event in events:
            observe = table.get(event.type)  # most events are observed by nothing
            if observe is not None:
                observe(state, event)
        after(state, events, seconds)

    return committed


def merge_tables(tables: Iterable[Mapping[str, EventObserver]]) -> dict[str, EventObserver]:
    """One table: a type that several tables name gets one observer calling theirs in order."""
    found: dict[str, list[EventObserver]] = {}
    for table in tables:
        for kind, observe in table.items():
            found.setdefault(kind, []).append(observe)
    return {kind: _chain(tuple(each)) for kind, each in found.items()}


def _chain(observers: tuple[EventObserver, ...]) -> EventObserver:
    if len(observers) == 1:
        return observers[0]
    if len(observers) == 2:  # metrics and the log: two calls, no loop
        first, second = observers

        def both(state: ExecutionState, event: Event) -> None:
            first(state, event)
            second(state, event)

        return both

    def each(state: ExecutionState, event: Event) -> None:
        for observe in observers:
            observe(state, event)

    return each


def _batch_chain(observers: tuple[CommitObserver, ...]) -> CommitObserver:
    if len(observers) == 1:  # the commit's duration, without traces
        return observers[0]

    def each(state: ExecutionState, events: list[Event], seconds: float) -> None:
        for observe in observers:
            observe(state, events, seconds)

    return each
