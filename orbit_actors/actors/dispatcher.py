"""The dispatcher matches ready task units to worker sessions with free capacity.

Units wait in queues keyed by (task, contract version, language): a unit whose task names no
language (or ``any``) waits in the language-free queue, which every session announcing the task
serves; a unit naming a language waits in that language's queue, served by sessions of that
runtime (case-insensitive). A session with free capacity takes the oldest unit of the queues it
serves. Every method runs to completion without awaiting, so calls are serialized as an actor's
mailbox would serialize them, and each costs the same however many executions are active.

A match reserves a slot and *offers* the unit to its execution actor, which commits
``StepDispatched`` and pushes the task — or refuses a stale offer and gives the slot back.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ..decide.invocation import TaskInvocation

QueueKey = tuple[str, str, str | None]


@dataclass(frozen=True)
class Offer:
    """A unit offered to a session: the execution actor gets it as ``OfferDispatch``."""

    execution_id: str
    key: str
    attempt: int
    session_id: str
    worker_id: str


@dataclass(eq=False)
class _Ready:
    order: int
    execution_id: str
    key: str
    attempt: int


@dataclass(eq=False)
class _Slots:
    worker_id: str
    queues: list[QueueKey]
    capacity: int
    used: int = 0
    tokens: set[str] = field(default_factory=set)

    @property
    def free(self) -> int:
        return self.capacity - self.used


def queue_key(task_name: str, contract_version: str, language: str | None) -> QueueKey:
    """The queue of a unit: ``any`` and no language share the language-free queue."""
    lang = None if language is None or language.lower() == "any" else language.lower()
    return (task_name, contract_version, lang)


class Dispatcher:
    """Queues of ready units and the free capacity of sessions. ``offer`` hands a match to the
    unit's execution actor and returns the token it used (or None when the actor is gone)."""

    def __init__(self, offer: Callable[[Offer], str | None]) -> None:
        self._offer = offer
        self._queues: dict[QueueKey, deque[_Ready]] = {}
        self._servers: dict[QueueKey, dict[str, None]] = {}
        self._sessions: dict[str, _Slots] = {}
        self._order = itertools.count()

    def statistics(self) -> dict[str, int]:
        """Units waiting per task (``task@version``)."""
        depth: dict[str, int] = {}
        for (task, version, _), queue in self._queues.items():
            depth[f"{task}@{version}"] = depth.get(f"{task}@{version}", 0) + len(queue)
        return depth

    def enqueue(self, execution_id: str, unit: TaskInvocation) -> None:
        """A unit is ready: hand it to a session with room, or queue it oldest-first."""
        key = queue_key(unit.task_name, unit.contract_version, unit.language)
        ready = _Ready(next(self._order), execution_id, unit.key, unit.attempt)
        for session_id in self._servers.get(key, ()):
            if self._sessions[session_id].free > 0:
                self._hand(ready, session_id)
                return
        self._queues.setdefault(key, deque()).append(ready)

    def claim(self, unit: TaskInvocation, token: str) -> tuple[str, str] | None:
        """Reserve a slot for ``unit`` under ``token`` if a session can take it now and no older
        unit waits for it; returns (session id, worker id)."""
        key = queue_key(unit.task_name, unit.contract_version, unit.language)
        if self._queues.get(key):
            return None
        for session_id in self._servers.get(key, ()):
            slots = self._sessions[session_id]
            if slots.free > 0:
                slots.used += 1
                slots.tokens.add(token)
                return session_id, slots.worker_id
        return None

    def add_session(
        self,
        session_id: str,
        worker_id: str,
        runtime: str,
        contracts: list[tuple[str, str]],
        capacity: int,
        held: set[str] | None = None,
    ) -> None:
        """A session can take work: ``contracts`` are (task, version) pairs; ``held`` are the
        tokens it already holds (a resumed session), which use slots."""
        queues = [
            (task, version, lang) for task, version in contracts for lang in (None, runtime.lower())
        ]
        tokens = set(held or ())
        self._sessions[session_id] = _Slots(worker_id, queues, capacity, len(tokens), tokens)
        for key in queues:
            self._servers.setdefault(key, {})[session_id] = None
        self.fill(session_id)

    def remove_session(self, session_id: str) -> None:
        """The session takes no more work (closed, dead or unregistered)."""
        slots = self._sessions.pop(session_id, None)
        if slots is None:
            return
        for key in slots.queues:
            servers = self._servers.get(key)
            if servers is not None:
                servers.pop(session_id, None)

    def set_capacity(self, session_id: str, capacity: int) -> None:
        """The worker changed its concurrency (``credit``)."""
        slots = self._sessions.get(session_id)
        if slots is not None:
            slots.capacity = capacity
            self.fill(session_id)

    def release(self, session_id: str, token: str) -> None:
        """A slot is free again: the result came, the task was cancelled, or the offer was
        stale."""
        slots = self._sessions.get(session_id)
        if slots is not None and token in slots.tokens:
            slots.tokens.discard(token)
            slots.used -= 1
            self.fill(session_id)

    def fill(self, session_id: str) -> None:
        """Give a session the oldest units it can serve while it has room."""
        slots = self._sessions.get(session_id)
        while slots is not None and slots.free > 0:
            best: deque[_Ready] | None = None
            for key in slots.queues:
                queue = self._queues.get(key)
                if queue and (best is None or queue[0].order < best[0].order):
                    best = queue
            if best is None:
                return
            self._hand(best.popleft(), session_id)
            slots = self._sessions.get(session_id)

    def _hand(self, ready: _Ready, session_id: str) -> None:
        slots = self._sessions[session_id]
        offer = Offer(ready.execution_id, ready.key, ready.attempt, session_id, slots.worker_id)
        token = self._offer(offer)
        if token is not None:
            slots.used += 1
            slots.tokens.add(token)
