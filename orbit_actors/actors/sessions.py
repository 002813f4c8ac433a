"""Worker sessions: the session rules of worker-protocol.md, without the socket.

A :class:`Connection` takes decoded messages and answers through the ``send`` it was given (the
gateway owns the socket; tests pass a list's ``append``). The :class:`SessionManager` keeps the
sessions, their tokens in flight and their liveness: a session is alive while its worker sends
anything within the session timeout; when it dies, each token it held becomes uncertain once the
timeout has also passed since the token's dispatch. Tokens found in flight after a restart wait
for their session to be resumed, for the timeout counted from the restart.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from ..decide.commands import Ack
from ..errors import ForbiddenError, OrbitError
from ..history.events import ErrorInfo
from ..store.base import WorkerRecord
from ..wire import messages as wire
from .clock import Clock

log = logging.getLogger("orbit.workers")

Send = Callable[[wire.ServerMessage], None]
Close = Callable[[int, str], None]


class SessionHost(Protocol):
    """What sessions need from the runtime."""

    clock: Clock

    async def report_result(
        self, token: str, worker_id: str, output: Any, failure: ErrorInfo | None
    ) -> Ack:
        """Route a result to its execution; raises ForbiddenError / PayloadTooLargeError."""
        ...

    def mark_uncertain(self, token: str, reason: str) -> None:
        """The attempt of ``token`` is uncertain (its session was lost)."""
        ...

    def task_versions(self, task_name: str) -> set[str]:
        """The contract versions of ``task_name`` that registered workflows use."""
        ...

    async def record_worker(self, record: WorkerRecord) -> None:
        """Write the worker registry."""
        ...

    async def touch_worker(self, worker_id: str, now_ms: int) -> None:
        """Note a sign of life (rate-limited by the store)."""
        ...

    def add_session(self, session: WorkerSession) -> None:
        """The session can take work."""
        ...

    def remove_session(self, session_id: str) -> None:
        """The session takes no more work."""
        ...

    def release(self, session_id: str, token: str) -> None:
        """A slot of the session is free again."""
        ...

    def set_capacity(self, session_id: str, capacity: int) -> None:
        """The session's concurrency changed."""
        ...


@dataclass(eq=False)
class WorkerSession:
    """One registration of a worker process and the tokens it holds."""

    id: str
    worker_id: str
    runtime: str
    sdk: str
    contracts: list[tuple[str, str]]
    concurrency: int
    tokens: dict[str, int] = field(default_factory=dict)  # token -> dispatched_at_ms
    tasks: dict[str, wire.Task] = field(default_factory=dict)  # token -> what was pushed
    cancelled: dict[str, str] = field(default_factory=dict)  # token -> reason, not yet reported
    connection: Connection | None = None
    expires_at: float = 0.0  # trio time
    orphan: bool = False  # found in flight after a restart, waiting to be resumed


class SessionManager:
    """All sessions of this server, and the timer that declares them dead."""

    def __init__(
        self, host: SessionHost, heartbeat_ms: int = 5000, timeout_ms: int = 30_000
    ) -> None:
        self.host = host
        # a worker beating at the interval must never look silent: at least three beats per timeout
        self.heartbeat_ms = max(1, min(heartbeat_ms, timeout_ms // 3))
        self.timeout_ms = timeout_ms
        self.sessions: dict[str, WorkerSession] = {}
        self._holder: dict[str, str] = {}  # token -> session id
        self._changed = trio.Event()
        self._pending_uncertain: dict[str, tuple[float, str]] = {}  # token -> (due, reason)
        self._next_wake = 0.0  # when the liveness timer looks next

    def connect(
        self, send: Send, close: Close | None = None, bound_worker_id: str | None = None
    ) -> Connection:
        """A new connection; feed it every decoded message. ``bound_worker_id``: the worker
        its credentials name; it may register as no other."""
        connection = Connection(self, send, close or (lambda code, reason: None))
        connection.bound_worker_id = bound_worker_id
        return connection

    # -- tokens ---------------------------------------------------------------------------
    def hold(
        self, session_id: str, token: str, dispatched_at_ms: int, task: wire.Task | None = None
    ) -> None:
        """A token was dispatched to a session (``task`` is what was pushed, kept to push it
        again when the session is resumed)."""
        session = self.sessions.get(session_id)
        if session is not None:
            session.tokens[token] = dispatched_at_ms
            if task is not None:
                session.tasks[token] = task
            self._holder[token] = session_id

    def adopt(
        self, session_id: str, worker_id: str, task: wire.Task, dispatched_at_ms: int
    ) -> None:
        """After a restart: a task held by a session that may come back within the timeout."""
        token = task.token
        if token in self._holder:
            return
        session = self.sessions.get(session_id)
        if session is None:
            session = WorkerSession(session_id, worker_id, "", "", [], 0, orphan=True)
            session.expires_at = trio.current_time() + self.timeout_ms / 1000
            self.sessions[session_id] = session
            self._poke()
        self.hold(session_id, token, dispatched_at_ms, task)

    def settle(self, token: str) -> None:
        """A token's result was recorded: its slot is free."""
        session_id = self._holder.pop(token, None)
        self._pending_uncertain.pop(token, None)
        if session_id is None:
            return
        session = self.sessions.get(session_id)
        if session is not None:
            session.tokens.pop(token, None)
            session.tasks.pop(token, None)
            session.cancelled.pop(token, None)
        self.host.release(session_id, token)

    def cancel(self, tokens: dict[str, str]) -> None:
        """Tell each token's worker to stop it; a cancelled token's slot is free at once."""
        by_session: dict[str, dict[str, str]] = {}
        for token, reason in tokens.items():
            session_id = self._holder.get(token)
            if session_id is not None:
                by_session.setdefault(session_id, {})[token] = reason
        for session_id, cancelled in by_session.items():
            session = self.sessions[session_id]
            for token in cancelled:
                session.cancelled[token] = cancelled[token]
                self.host.release(session_id, token)
            if session.connection is not None:
                reason = next(iter(cancelled.values()))
                session.connection.send(wire.Cancel(tokens=list(cancelled), reason=reason))

    # -- liveness -------------------------------------------------------------------------
    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Declare sessions dead when their time is up, and their tokens uncertain."""
        task_status.started()
        while True:
            self._changed = trio.Event()
            wake = self._next_wake = self._expire(trio.current_time())
            with trio.move_on_at(wake):
                await self._changed.wait()

    def _poke(self) -> None:
        self._changed.set()

    def _expire(self, now: float) -> float:
        """Handle what is due at ``now``; returns when to look again."""
        wake = now + 3600.0
        for session in list(self.sessions.values()):
            if session.expires_at <= now:
                self._die(session, "stopped responding")
            else:
                wake = min(wake, session.expires_at)
        for token, (due, reason) in list(self._pending_uncertain.items()):
            if due <= now:
                del self._pending_uncertain[token]
                self._holder.pop(token, None)
                self.host.mark_uncertain(token, reason)
            else:
                wake = min(wake, due)
        return wake

    def _die(self, session: WorkerSession, why: str) -> None:
        """The session is over: its tokens become uncertain once the timeout has passed since
        their dispatch too."""
        self.sessions.pop(session.id, None)
        self.host.remove_session(session.id)
        if session.connection is not None:  # connected but silent: the worker is hung
            session.connection.session = None
            session.connection.close(4001, "session timed out")
            session.connection = None
        reason = f"worker `{session.worker_id}` {why}"
        log.warning("worker session died", extra={"orbit": {
            "worker_id": session.worker_id, "session": session.id, "why": why,
            "inflight": len(session.tokens),
        }})  # fmt: skip
        now_ms = self.host.clock.now_ms()
        for token, dispatched_at in session.tokens.items():
            if token in session.cancelled:
                self._holder.pop(token, None)
                continue
            due_ms = max(now_ms, dispatched_at + self.timeout_ms)
            self._pending_uncertain[token] = (self.host.clock.deadline(due_ms), reason)
        self._poke()

    def unregister(self, session: WorkerSession) -> None:
        """The worker said goodbye: its tasks are redelivered at once."""
        log.info("worker unregistered", extra={"orbit": {
            "worker_id": session.worker_id, "session": session.id,
        }})  # fmt: skip
        self.sessions.pop(session.id, None)
        self.host.remove_session(session.id)
        for token in session.tokens:
            self._holder.pop(token, None)
            if token not in session.cancelled:
                self.host.mark_uncertain(token, "worker unregistered")

    def disconnected(self, session: WorkerSession) -> None:
        """The connection closed without goodbye: the session may be resumed until it times out."""
        session.connection = None
        session.expires_at = trio.current_time() + self.timeout_ms / 1000
        self.host.remove_session(session.id)
        self._poke()

    def close_connections(self, code: int, reason: str) -> None:
        """Close every worker connection (the server is shutting down); each session stays
        resumable until it times out."""
        for session in list(self.sessions.values()):
            connection = session.connection
            if connection is not None:
                connection.closed()
                connection.close(code, reason)

    def seen(self, session: WorkerSession) -> None:
        """Any message is a sign of life."""
        session.expires_at = trio.current_time() + self.timeout_ms / 1000
        if session.expires_at < self._next_wake:
            self._poke()


class Connection:
    """The protocol of one connection: registration, results, heartbeats, credit, goodbye."""

    def __init__(self, manager: SessionManager, send: Send, close: Close) -> None:
        self.manager = manager
        self.send = send
        self.close = close
        self.session: WorkerSession | None = None
        self.ever_registered = False
        self.bound_worker_id: str | None = None

    async def handle(self, message: wire.WorkerMessage) -> None:
        """Answer one decoded message."""
        if isinstance(message, wire.Register):
            await self._register(message)
            return
        session = self.session
        if session is None:
            self._error("NOT_REGISTERED", "register before sending anything else", message.id)
            return
        self.manager.seen(session)
        await self.manager.host.touch_worker(session.worker_id, self.manager.host.clock.now_ms())
        if isinstance(message, wire.Complete | wire.Fail):
            await self._result(session, message)
        elif isinstance(message, wire.Heartbeat):
            self.send(wire.HeartbeatAck(cancel=list(session.cancelled), ref=message.id))
        elif isinstance(message, wire.Credit):
            session.concurrency = message.concurrency
            self.manager.host.set_capacity(session.id, message.concurrency)
            self.send(wire.CreditAck(concurrency=message.concurrency, ref=message.id))
        elif isinstance(message, wire.Unregister):
            self.manager.unregister(session)
            self.session = None
            self.send(wire.Unregistered(ref=message.id))

    def closed(self) -> None:
        """The transport closed; a session not unregistered stays resumable until it times out."""
        if self.session is not None and self.session.connection is self:
            self.manager.disconnected(self.session)
        self.session = None

    def _error(self, code: str, message: str, ref: str | int | None) -> None:
        self.send(wire.ErrorMessage(code=code, message=message, ref=ref))

    async def _register(self, message: wire.Register) -> None:
        if self.session is not None:
            self._error("ALREADY_REGISTERED", "this connection already holds a session", message.id)
            return
        refusal = _refusal(message)
        if refusal is not None:
            self._error(*refusal, message.id)
            return
        bound = self.bound_worker_id
        if bound is not None and message.worker_id != bound:
            self._error(
                "FORBIDDEN",
                f"this worker token is bound to worker `{bound}`; "
                f"it cannot register as `{message.worker_id}`",
                message.id,
            )
            return
        session, resumed, warnings = self._open(message)
        self.session = session
        self.ever_registered = True
        session.connection = self  # before any await: the liveness timer must see it connected
        self.manager.seen(session)
        host = self.manager.host
        now = host.clock.now_ms()
        contracts = [{"task_name": t, "contract_version": v} for t, v in session.contracts]
        await host.record_worker(
            WorkerRecord(message.worker_id, message.runtime, message.sdk, contracts, now, now)
        )
        self.send(wire.Registered(
            worker_session_id=session.id, heartbeat_interval_ms=self.manager.heartbeat_ms,
            session_timeout_ms=self.manager.timeout_ms, resumed=resumed,
            warnings=warnings + _version_warnings(session.contracts, host), ref=message.id,
        ))  # fmt: skip
        host.add_session(session)
        log.info("worker registered", extra={"orbit": {
            "worker_id": session.worker_id, "session": session.id, "resumed": resumed,
            "concurrency": session.concurrency,
        }})  # fmt: skip
        if resumed:  # a task frame may have been lost with the connection (or the server)
            for token, task in session.tasks.items():
                if token not in session.cancelled:
                    self.send(task)
        if session.cancelled:
            self.send(
                wire.Cancel(
                    tokens=list(session.cancelled), reason=next(iter(session.cancelled.values()))
                )
            )

    def _open(self, message: wire.Register) -> tuple[WorkerSession, bool, list[str]]:
        manager = self.manager
        contracts = [(c.task_name, c.contract_version) for c in message.contracts]
        wanted = message.resume_session_id
        previous = manager.sessions.get(wanted) if wanted else None
        if previous is not None and previous.worker_id == message.worker_id:
            if previous.connection is not None and previous.connection is not self:
                previous.connection.session = None
                previous.connection.close(4000, "session resumed elsewhere")
                manager.host.remove_session(previous.id)
            previous.runtime, previous.sdk = message.runtime, message.sdk
            previous.contracts, previous.concurrency, previous.orphan = (
                contracts,
                message.concurrency,
                False,
            )
            return previous, True, []
        warnings = []
        if wanted:
            why = (
                "it belongs to another worker"
                if previous is not None
                else "it timed out or is unknown"
            )
            warnings.append(
                f"session {wanted} cannot be resumed ({why}); a new session was started"
            )
        session = WorkerSession(
            f"s-{secrets.token_hex(8)}", message.worker_id, message.runtime, message.sdk,
            contracts, message.concurrency,
        )  # fmt: skip
        manager.sessions[session.id] = session
        return session, False, warnings

    async def _result(self, session: WorkerSession, message: wire.Complete | wire.Fail) -> None:
        failure = None
        if isinstance(message, wire.Fail):
            e = message.error
            failure = ErrorInfo(
                code=e.code, message=e.message, retryable=e.retryable, details=e.details
            )
        output = message.output if isinstance(message, wire.Complete) else None
        try:
            ack = await self.manager.host.report_result(
                message.token, session.worker_id, output, failure
            )
        except ForbiddenError as exc:
            self._error("FORBIDDEN", exc.message, message.id)
            return
        except OrbitError as exc:
            self._error(exc.code, exc.message, message.id)
            return
        self.manager.settle(message.token)
        self.send(
            wire.Ack(token=ack.token, accepted=ack.accepted, reason=ack.reason, ref=message.id)
        )


def _refusal(message: wire.Register) -> tuple[str, str] | None:
    if not message.worker_id:
        return ("INVALID_REQUEST", "worker_id is required")
    if not message.contracts:
        return ("INVALID_REQUEST", "a worker must announce at least one task contract")
    for contract in message.contracts:
        name = contract.task_name
        if name.startswith("workflow:"):
            return ("RESERVED_TASK", f"`{name}` names a child workflow, not a worker task")
        if name.startswith("orbit."):
            return ("RESERVED_TASK", f"`{name}` is a built-in task")
    return None


def _version_warnings(contracts: list[tuple[str, str]], host: SessionHost) -> list[str]:
    warnings = []
    for task, version in contracts:
        used = host.task_versions(task)
        if used and version not in used:
            listed = ", ".join(sorted(used))
            warnings.append(
                f"`{task}` is announced at version {version} but registered workflows use "
                f"{listed}; this worker will not receive those tasks"
            )
    return warnings
