"""The worker pool: the one owner of which worker session holds which token, of every session's
free capacity, and of the queues of ready task units waiting for a session.

Units wait in queues keyed by (task, contract version, language): a unit whose task names no
language (or ``any``) waits in the language-free queue, which every session announcing the task
serves; a unit naming a language waits in that language's queue, served by sessions of that
runtime (case-insensitive). A session with free capacity takes the oldest unit of the queues it
serves. Every method runs to completion without awaiting, so calls are serialized as an actor's
mailbox would serialize them, and each costs the same however many executions are active.

A token's life in the pool: **reserved** for a session by :meth:`WorkerPool.claim` (an actor
dispatching in its own commit) or by a match handed to the unit's actor as an :class:`Offer`;
**pushed** once its ``StepDispatched`` is durable (or, when its actor crashed in between, when
the respawned actor adopts it); then **settled** when the worker answers,
**cancelled** (the slot is free at once; the token stays listed until the worker reports it), or
**lost** with its session. A reservation whose commit fails or whose offer was stale is
**released**. A session that ends hands back every token it held, reserved ones included, so an
attempt committed after its worker left is redelivered like any other.

A pushed task is held as its fields (:class:`~orbit_actors.wire.server_fields.TaskFields`), not
as a ``Task`` model: the gateway encodes them as they are (``wire.encode_task``: the bytes the
model gives), and building the model was a third of a dispatch's cost to the pool's sessions
(~8,000 instructions per task). Only a session that takes models (an in-process worker) gets
one, made by :func:`task_model`.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from ..decide.invocation import RateTake, TaskInvocation
from ..store.base import RateCharge, RateLimited
from ..views.unchecked import unchecked
from ..wire import messages as wire
from ..wire.server_fields import TaskFields
from .clock import system_ms
from .flow_queue import DEFAULT_PRIORITY, RANK_SHIFT, FlowQueue, rank
from .rate_windows import RateWindows

QueueKey = tuple[str, str, str | None]
Send = Callable[[wire.ServerMessage], None]
SendTask = Callable[[TaskFields], None]


def task_model(task: TaskFields) -> wire.Task:
    """The ``Task`` of these fields (every field, each already of its type: not validated);
    it shares them (a frozen model, and held fields are never changed: a resend is a copy)."""
    return unchecked(wire.Task, cast("dict[str, Any]", task), _TASK_GIVEN)


def resent(task: TaskFields) -> TaskFields:
    """The task as it is sent again to the session that holds it (``Task.again``)."""
    return {**task, "resent": True}


_TASK_GIVEN = frozenset(wire.Task.model_fields) - {"type", "resent"}
"""The fields a dispatch's ``Task`` names (the rest keep their defaults)."""


@dataclass(frozen=True, slots=True)
class Offer:
    """A unit matched to a session: its execution actor gets it as ``OfferDispatch`` (as a
    ``RemoteOffer`` through the owner's inbox for a ``remote`` unit, one claimed from the queue
    several servers share)."""

    execution_id: str
    key: str
    attempt: int
    session_id: str
    worker_id: str
    remote: bool = False


class Sharing(Protocol):
    """How the pool takes part in a task queue shared by several servers (none by default)."""

    def spilled(self, execution_id: str, key: str, attempt: int, queue: QueueKey) -> None:
        """A unit of this server's waits with no session free here: others may claim it."""
        ...

    def handed(self, execution_id: str, key: str, attempt: int) -> None:
        """A unit that had to wait (see :meth:`spilled`) was handed to a session here."""
        ...

    def hungry(self) -> None:
        """A session here has room and nothing queued here to serve: look for shared work."""
        ...


@dataclass(eq=False, slots=True)
class Held:
    """A token a session holds: reserved (``task`` None) or pushed; ``cancelled`` says why the
    worker was told to stop it (its slot is free again)."""

    token: str
    session_id: str
    since_ms: int  # reserved at, then dispatched at
    task: TaskFields | None = None
    cancelled: str | None = None


@dataclass(eq=False)
class TaskLoad:
    """One task version as the pool sees it: the sessions (and their workers) taking it, their
    capacity and tokens in use, and the units queued for it (the oldest queued when)."""

    sessions: set[str] = field(default_factory=set)
    workers: set[str] = field(default_factory=set)
    capacity: int = 0
    in_flight: int = 0
    waiting: int = 0
    oldest_since_ms: int | None = None


@dataclass(eq=False, slots=True)
class _Ready:
    order: int
    execution_id: str
    key: str
    attempt: int
    remote: bool = False  # claimed from the shared queue: another server owns the execution
    spilled: bool = False  # this server's unit, published to the shared queue while it waits
    since_ms: int = 0  # when it was queued
    withdrawn: bool = False  # its attempt ended while it waited: skipped when reached
    flow_key: str | None = None  # its execution's concurrency key (flow_queue.py)
    rate: RateTake | None = None  # the rate limit its dispatch counts against (rate_windows.py)


@dataclass(eq=False)
class _Member:
    """A session as the pool sees it; ``send`` is None while it is disconnected (it keeps its
    tokens and takes no new work)."""

    worker_id: str
    queues: list[QueueKey]
    capacity: int
    send: Send | None
    held: dict[str, Held] = field(default_factory=dict)
    used: int = 0  # held tokens that are not cancelled
    send_task: SendTask | None = None  # set with ``send``

    @property
    def free(self) -> int:
        return self.capacity - self.used if self.send is not None else 0


def queue_key(task_name: str, contract_version: str, language: str | None) -> QueueKey:
    """The queue of a unit: ``any`` and no language share the language-free queue."""
    lang = None if language is None or language.lower() == "any" else language.lower()
    return (task_name, contract_version, lang)


class WorkerPort(Protocol):
    """What an execution actor does with the pool (the :class:`WorkerPool` is one)."""

    def enqueue(self, execution_id: str, unit: TaskInvocation) -> None:
        """A task unit is ready for a worker."""
        ...

    def claim(self, unit: TaskInvocation, token: str, now_ms: int) -> tuple[str, str] | None:
        """Reserve a slot for ``token`` if a session can take ``unit`` now and no older unit
        waits for one: (session id, worker id)."""
        ...

    def withdraw(self, execution_id: str, unit: TaskInvocation) -> None:
        """A queued unit's attempt ended before a session took it."""
        ...

    def release(self, token: str) -> None:
        """A reservation was not used (stale offer, failed commit): its slot is free."""
        ...

    def take_rate(self, execution_id: str, unit: TaskInvocation, now_ms: int) -> bool:
        """Count an offered unit's dispatch against what this server knows of its rate limit;
        False: over it (the pool keeps the unit and offers it again once the limit allows)."""
        ...

    def rates_not_taken(
        self, charges: Sequence[RateCharge], limited: RateLimited | None = None
    ) -> None:
        """A commit carrying ``charges`` was not written: they did not happen. ``limited``: the
        store refused it over a rate limit, whose window opens at ``limited.opens_at_ms``."""
        ...

    def hold(self, execution_id: str, unit: TaskInvocation, now_ms: int) -> None:
        """Keep a unit whose dispatch the store refused until its window opens."""
        ...

    def push(self, task: TaskFields, now_ms: int) -> None:
        """The reserved token's ``StepDispatched`` is durable: send the task to its session."""
        ...

    def settle(self, token: str) -> Held | None:
        """The worker answered ``token``: its slot is free. Returns what it held."""
        ...

    def restore(self, held: Held) -> bool:
        """Undo :meth:`settle` (the answer's commit failed: the token is in flight again);
        False when its session has ended meanwhile."""
        ...

    def cancel(self, tokens: dict[str, str]) -> None:
        """Tell each token's worker to stop it (token → reason); the slots are free at once."""
        ...


class WorkerPool:
    """Queues of ready units, sessions and the tokens they hold. ``offer`` hands a match to the
    unit's execution actor and returns the token it reserved under (None when the actor is
    gone)."""

    def __init__(
        self,
        offer: Callable[[Offer], str | None],
        sharing: Sharing | None = None,
        now_ms: Callable[[], int] = system_ms,
    ) -> None:
        self._offer = offer
        self.sharing = sharing
        self._now_ms = now_ms
        self.rates: RateWindows[tuple[_Ready, QueueKey]] = RateWindows()
        self._rate_limited: dict[tuple[str, str], RateTake] = {}  # parked: (execution, unit)
        self._queues: dict[QueueKey, deque[_Ready] | FlowQueue[_Ready]] = {}
        self._servers: dict[QueueKey, dict[str, None]] = {}  # sessions taking work, per queue
        self._members: dict[str, _Member] = {}
        self._held: dict[str, Held] = {}  # every token held, by token
        self._order = itertools.count(rank(DEFAULT_PRIORITY, 0))  # plain units: priority 5
        self._queued: dict[tuple[str, str, int], _Ready] = {}  # this server's units queued
        self._withdrawn: dict[QueueKey, int] = {}  # withdrawn units still in each queue

    # -- units ------------------------------------------------------------------------------
    def enqueue(self, execution_id: str, unit: TaskInvocation) -> None:
        """A unit is ready: hand it to a session with room, or queue it oldest-first."""
        key = queue_key(unit.task_name, unit.contract_version, unit.language)
        ready = _Ready(next(self._order), execution_id, unit.key, unit.attempt)
        ready.since_ms = self._now_ms()
        flow = unit.flow
        if flow is not None:
            ready.order += (flow.priority - DEFAULT_PRIORITY) << RANK_SHIFT
            ready.flow_key, ready.rate = flow.key, unit.rate
        for session_id in self._servers.get(key, ()):
            if self._members[session_id].free > 0:
                if ready.rate is None or self._within_rate(ready, key):
                    self._hand(ready, session_id)
                return
        self._queue_here(ready, key)

    def _queue_here(self, ready: _Ready, key: QueueKey) -> None:
        """Queue one of this server's units (no session here has room), and publish it for
        the other servers sharing the task queue, if any."""
        if ready.flow_key is None and ready.order >> RANK_SHIFT == DEFAULT_PRIORITY:
            self._queues.setdefault(key, deque()).append(ready)
        else:
            self._flow_queue(key).append(ready)
        self._queued[(ready.execution_id, ready.key, ready.attempt)] = ready
        if self.sharing is not None:
            ready.spilled = True
            self.sharing.spilled(ready.execution_id, ready.key, ready.attempt, key)

    def _flow_queue(self, key: QueueKey) -> FlowQueue[_Ready]:
        """The queue ``key`` ordered by flow control (a plain one becomes one)."""
        queue = self._queues.get(key)
        if not isinstance(queue, FlowQueue):
            queue = self._queues[key] = FlowQueue(queue)
        return queue

    def enqueue_remote(self, execution_id: str, key: str, attempt: int, queue: QueueKey) -> None:
        """A unit claimed from the shared queue for a session here (another server owns it)."""
        ready = _Ready(next(self._order), execution_id, key, attempt, remote=True)
        for session_id in self._servers.get(queue, ()):
            if self._members[session_id].free > 0:
                self._hand(ready, session_id)
                return
        self._queues.setdefault(queue, deque()).append(ready)

    def withdraw(self, execution_id: str, unit: TaskInvocation) -> None:
        """A queued unit's attempt ended before any session took it (schedule-to-start): it
        no longer counts as waiting and is skipped when its turn comes."""
        ready = self._queued.pop((execution_id, unit.key, unit.attempt), None)
        if ready is not None and not ready.withdrawn:
            ready.withdrawn = True
            key = queue_key(unit.task_name, unit.contract_version, unit.language)
            self._withdrawn[key] = self._withdrawn.get(key, 0) + 1

    def _waiting(self, key: QueueKey) -> int:
        """Units queued for ``key`` that may still be taken."""
        queue = self._queues.get(key)
        return len(queue) - self._withdrawn.get(key, 0) if queue else 0

    def hunger(self) -> dict[QueueKey, int]:
        """Free slots per queue of sessions that have nothing queued here to serve."""
        wanted: dict[QueueKey, int] = {}
        for key, sessions in self._servers.items():
            if self._waiting(key):
                continue
            free = sum(self._members[session_id].free for session_id in sessions)
            if free > 0:
                wanted[key] = free
        return wanted

    def claim(self, unit: TaskInvocation, token: str, now_ms: int = 0) -> tuple[str, str] | None:
        """Reserve a slot for ``unit`` under ``token`` if a session can take it now and no older
        unit waits for it; returns (session id, worker id)."""
        key = queue_key(unit.task_name, unit.contract_version, unit.language)
        if self._waiting(key):
            return None
        for session_id in self._servers.get(key, ()):
            member = self._members[session_id]
            if member.free > 0:
                if unit.rate is not None and not self.rates.take(unit.rate, now_ms):
                    return None  # it is enqueued next, and waits there for its window
                self._reserve(member, session_id, token, now_ms)
                return session_id, member.worker_id
        return None

    def loads(self) -> dict[tuple[str, str], TaskLoad]:
        """By ``(task, contract version)``: who serves it here and what waits for it."""
        found: dict[tuple[str, str], TaskLoad] = {}
        for (task, version, _), sessions in self._servers.items():
            load = found.setdefault((task, version), TaskLoad())
            for session_id in sessions:
                if session_id not in load.sessions:
                    member = self._members[session_id]
                    load.sessions.add(session_id)
                    load.workers.add(member.worker_id)
                    load.capacity += member.capacity
                    load.in_flight += member.used
        for key, queue in self._queues.items():
            waiting = self._waiting(key)
            if waiting:
                load = found.setdefault(key[:2], TaskLoad())
                load.waiting += waiting
                oldest = next(r.since_ms for r in queue if not r.withdrawn)
                load.oldest_since_ms = min(load.oldest_since_ms or oldest, oldest)
        return found

    def statistics(self) -> dict[str, int]:
        """Units waiting per task (``task@version``)."""
        depth: dict[str, int] = {}
        for key in self._queues:
            name = f"{key[0]}@{key[1]}"
            depth[name] = depth.get(name, 0) + self._waiting(key)
        return depth

    # -- tokens -----------------------------------------------------------------------------
    def push(self, task: TaskFields, now_ms: int) -> None:
        """Send a reserved token's task to its session (kept to push again on a resume). A
        token whose session ended meanwhile went back with that session's tokens."""
        held = self._held.get(task["token"])
        if held is None:
            return
        held.task, held.since_ms = task, now_ms
        send_task = self._members[held.session_id].send_task
        if send_task is not None:
            send_task(task)

    def release(self, token: str) -> None:
        """A reservation was not used: the slot is free again (as when settled)."""
        self.settle(token)

    def settle(self, token: str) -> Held | None:
        """The worker answered ``token``: forget it and free its slot (once per result: done
        here, not through a helper shared with :meth:`release`)."""
        held = self._held.pop(token, None)
        if held is None:
            return None
        member = self._members[held.session_id]
        del member.held[token]
        if held.cancelled is None:
            member.used -= 1
            self.fill(held.session_id)
        return held

    def restore(self, held: Held) -> bool:
        """Hold a settled token again (its answer was not recorded); False when its session
        has ended, so nobody holds it."""
        member = self._members.get(held.session_id)
        if member is None:
            return False
        if held.token not in self._held:
            self._held[held.token] = member.held[held.token] = held
            member.used += held.cancelled is None
        return True

    def holds(self, token: str) -> bool:
        """True while a session connected here holds ``token``."""
        return token in self._held

    def cancel(self, tokens: dict[str, str]) -> None:
        """Mark tokens cancelled (their slots are free at once) and tell each connected worker."""
        by_session: dict[str, list[str]] = {}
        for token, reason in tokens.items():
            held = self._held.get(token)
            if held is None or held.cancelled is not None:
                continue
            held.cancelled = reason
            self._members[held.session_id].used -= 1
            by_session.setdefault(held.session_id, []).append(token)
        for session_id, cancelled in by_session.items():
            member = self._members[session_id]
            if member.send is not None:
                reason = tokens[cancelled[0]]
                member.send(wire.Cancel(tokens=cancelled, reason=reason))
            self.fill(session_id)

    def adopt(self, session_id: str, worker_id: str, task: TaskFields, since_ms: int) -> None:
        """After a restart: a task its session held in the previous process (the session
        waits, disconnected, to be resumed). After an actor's respawn in this process, a token
        still held: pushed already (nothing to do), or reserved only (its actor crashed after
        the dispatch was durable, before the push): pushed now."""
        token = task["token"]
        held = self._held.get(token)
        if held is not None:
            if held.task is None and held.cancelled is None:
                self.push(task, since_ms)
            return
        member = self._members.get(session_id)
        if member is None:
            member = self._members[session_id] = _Member(worker_id, [], 0, None)
        self._reserve(member, session_id, token, since_ms).task = task
        if member.send_task is not None:  # resumed before its execution was back: it may lack it
            member.send_task(resent(task))

    def holder(self, token: str) -> str | None:
        """The session holding ``token``, if any."""
        held = self._held.get(token)
        return held.session_id if held else None

    # -- sessions ---------------------------------------------------------------------------
    def connect(
        self,
        session_id: str,
        worker_id: str,
        runtime: str,
        contracts: list[tuple[str, str]],
        capacity: int,
        send: Send,
        send_task: SendTask | None = None,
    ) -> None:
        """A session (new or resumed: it keeps its tokens) takes work through ``send``, its
        tasks through ``send_task`` (by default as models, through ``send``)."""
        if send_task is None:
            send_task = _as_model(send)
        self._stop_serving(session_id)
        queues = [
            (task, version, lang) for task, version in contracts for lang in (None, runtime.lower())
        ]
        member = self._members.get(session_id)
        if member is None:
            member = self._members[session_id] = _Member(worker_id, queues, capacity, send)
        member.worker_id, member.queues, member.capacity, member.send = (
            worker_id, queues, capacity, send,
        )  # fmt: skip
        member.send_task = send_task
        for key in queues:
            self._servers.setdefault(key, {})[session_id] = None
        self.fill(session_id)

    def disconnect(self, session_id: str) -> None:
        """The session's connection is gone: it keeps its tokens and takes no work."""
        member = self._members.get(session_id)
        if member is not None:
            self._stop_serving(session_id)
            member.send = member.send_task = None

    def end(self, session_id: str) -> list[Held]:
        """The session is over: every token it held and was not cancelled, reserved ones
        included, for the liveness rules to make uncertain."""
        self._stop_serving(session_id)
        member = self._members.pop(session_id, None)
        if member is None:
            return []
        for token in member.held:
            del self._held[token]
        return [held for held in member.held.values() if held.cancelled is None]

    def set_capacity(self, session_id: str, capacity: int) -> None:
        """The worker changed its concurrency (``credit``)."""
        member = self._members.get(session_id)
        if member is not None:
            member.capacity = capacity
            self.fill(session_id)

    def pushed(self, session_id: str) -> Iterator[TaskFields]:
        """The tasks a session holds and was not told to stop (pushed again on a resume)."""
        member = self._members.get(session_id)
        for held in member.held.values() if member else ():
            if held.task is not None and held.cancelled is None:
                yield held.task

    def cancelled(self, session_id: str) -> dict[str, str]:
        """Tokens the session was told to stop and has not reported (token → reason)."""
        member = self._members.get(session_id)
        held = member.held.values() if member else ()
        return {h.token: h.cancelled for h in held if h.cancelled is not None}

    def inflight(self, session_id: str) -> int:
        """How many tokens the session holds (cancelled ones not yet reported included)."""
        member = self._members.get(session_id)
        return len(member.held) if member else 0

    def fill(self, session_id: str) -> None:
        """Give a session the oldest units it can serve while it has room."""
        member = self._members.get(session_id)
        while member is not None and member.free > 0:
            best: deque[_Ready] | FlowQueue[_Ready] | None = None
            best_key: QueueKey | None = None
            for key in member.queues:
                queue = self._queues.get(key)
                if queue and (best is None or queue[0].order < best[0].order):
                    best, best_key = queue, key
            if best is None or best_key is None:
                if self.sharing is not None:
                    self.sharing.hungry()
                return
            ready = best.popleft()
            if ready.withdrawn:
                self._withdrawn[best_key] -= 1
                continue
            self._queued.pop((ready.execution_id, ready.key, ready.attempt), None)
            if ready.rate is None or self._within_rate(ready, best_key):
                self._hand(ready, session_id)
            member = self._members.get(session_id)

    # -- rate limits ------------------------------------------------------------------------
    def _within_rate(self, ready: _Ready, key: QueueKey) -> bool:
        """True when ``ready`` may be offered now (its actor counts the dispatch: see
        :meth:`take_rate`); otherwise it is parked until its rate limit allows one."""
        assert ready.rate is not None
        now = self._now_ms()
        if self.rates.allows(ready.rate, now):
            return True
        self._park(ready, key, ready.rate, now)
        return False

    def _park(self, ready: _Ready, key: QueueKey, rate: RateTake, now_ms: int) -> None:
        self.rates.park((ready, key), rate, now_ms)
        self._rate_limited[(ready.execution_id, ready.key)] = rate

    def take_rate(self, execution_id: str, unit: TaskInvocation, now_ms: int) -> bool:
        """Count an offered unit's dispatch at ``now_ms`` (the instant its ``StepDispatched``
        records) in this server's hint; False when over it: the unit is parked, to be offered
        again later. The store counts it again, exactly, in the dispatch's commit."""
        rate = unit.rate
        if rate is None or self.rates.take(rate, now_ms):
            return True
        self.hold(execution_id, unit, now_ms)
        return False

    def rates_not_taken(
        self, charges: Sequence[RateCharge], limited: RateLimited | None = None
    ) -> None:
        """A commit carrying ``charges`` was not written: the hint gives them back, and learns
        when the window the store named opens if it refused the commit over a rate limit."""
        for charge in charges:
            self.rates.give_back(charge.take, charge.at_ms)
        if limited is not None:
            self.rates.close(limited.task, limited.key, limited.opens_at_ms)

    def hold(self, execution_id: str, unit: TaskInvocation, now_ms: int) -> None:
        """Park ``unit`` until its rate window opens, then offer it again."""
        rate = unit.rate
        assert rate is not None
        key = queue_key(unit.task_name, unit.contract_version, unit.language)
        ready = _Ready(next(self._order), execution_id, unit.key, unit.attempt, rate=rate)
        if unit.flow is not None:
            ready.order += (unit.flow.priority - DEFAULT_PRIORITY) << RANK_SHIFT
            ready.flow_key = unit.flow.key
        self._park(ready, key, rate, now_ms)

    def release_due(self, now_ms: int) -> None:
        """Offer again the units whose rate window has opened: to a session here with room,
        else queued here (and published to the shared queue, for another server's worker)."""
        touched: set[QueueKey] = set()
        for ready, key in self.rates.due(now_ms):
            self._rate_limited.pop((ready.execution_id, ready.key), None)
            self._queue_here(ready, key)
            touched.add(key)
        for key in touched:
            for session_id in list(self._servers.get(key, ())):
                self.fill(session_id)

    def rate_limited(self, execution_id: str, unit_key: str) -> RateTake | None:
        """The rate limit a unit waits for (None: it does not wait for one)."""
        return self._rate_limited.get((execution_id, unit_key))

    # -- inside -----------------------------------------------------------------------------
    def _hand(self, ready: _Ready, session_id: str) -> None:
        member = self._members[session_id]
        offer = Offer(
            ready.execution_id, ready.key, ready.attempt, session_id, member.worker_id,
            ready.remote,
        )  # fmt: skip
        if ready.spilled and self.sharing is not None:
            self.sharing.handed(ready.execution_id, ready.key, ready.attempt)
        token = self._offer(offer)
        if token is not None:
            self._reserve(member, session_id, token, 0)

    def _reserve(self, member: _Member, session_id: str, token: str, now_ms: int) -> Held:
        held = self._held[token] = member.held[token] = Held(token, session_id, now_ms)
        member.used += 1
        return held

    def _stop_serving(self, session_id: str) -> None:
        member = self._members.get(session_id)
        for key in member.queues if member else ():
            servers = self._servers.get(key)
            if servers is not None:
                servers.pop(session_id, None)


def _as_model(send: Send) -> SendTask:
    """A ``send_task`` that hands ``send`` each task as its model."""
    return lambda task: send(task_model(task))
