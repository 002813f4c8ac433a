"""Worker sessions: the session rules of worker-protocol.md, without the socket.

A :class:`Connection` takes decoded messages and answers through the ``send`` it was given (the
gateway owns the socket; tests pass a list's ``append``). The :class:`SessionManager` keeps the
sessions and their liveness: a session is alive while its worker sends anything within the
session timeout; when it dies, each token it held becomes uncertain once the timeout has also
passed since the token's dispatch. Tokens found in flight after a restart wait for their session
to be resumed, for the timeout counted from the restart. Which tokens a session holds and how
much capacity it has free are the :class:`~.pool.WorkerPool`'s, not this module's.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trio

from ..crashpoints import crash_point
from ..decide.transitions import Verdict
from ..errors import OrbitError, StorageError
from ..history.events import ErrorInfo
from ..store.base import WorkerRecord
from ..store.rules import TOUCH_INTERVAL_MS
from ..views.unchecked import unchecked
from ..wire import messages as wire
from ..wire.server_fields import TaskFields
from .clock import Clock
from .pool import SendTask, WorkerPool, resent, task_model

log = logging.getLogger("orbit.workers")

Send = Callable[[wire.ServerMessage], None]
SendAck = Callable[[str, bool, str | None, str | int | None], None]
"""Send the ``ack`` of a result: its token, accepted, reason and ref (the message's fields)."""
_ACK_GIVEN = frozenset({"token", "accepted", "reason", "ref"})
Close = Callable[[int, str], None]
Answered = Callable[[Verdict | OrbitError], None]
ReportNowait = Callable[[str, str, Any, ErrorInfo | None, Answered], bool]


@dataclass(frozen=True)
class SessionPorts:
    """What sessions need from the rest of the runtime, wired by ``open_runtime``."""

    clock: Clock
    report_result: Callable[[str, str, Any, ErrorInfo | None], Awaitable[Verdict]]
    """Route a result to its execution (which frees the slot); raises ForbiddenError /
    PayloadTooLargeError."""
    mark_uncertain: Callable[[str, str], None]
    """The attempt of a token is uncertain (its session was lost)."""
    task_versions: Callable[[str], set[str]]
    """The contract versions of a task that registered workflows use."""
    record_worker: Callable[[WorkerRecord], Awaitable[None]]
    """Write the worker registry."""
    touch_worker: Callable[[str, int], Awaitable[None]]
    """Note a sign of life (rate-limited by the store)."""
    report_result_nowait: ReportNowait | None = None
    """``report_result`` without a wait, where the result's execution lives here: the last
    argument is called with the verdict or the refusal; False when only ``report_result`` can
    carry it."""


@dataclass(eq=False)
class WorkerSession:
    """One registration of a worker process: its connection and liveness (the tokens it holds
    and its capacity are the pool's)."""

    id: str
    worker_id: str
    runtime: str
    sdk: str
    contracts: list[tuple[str, str]]
    connection: Connection | None = None
    expires_at: float = 0.0  # trio time
    orphan: bool = False  # found in flight after a restart, waiting to be resumed


class SessionManager:
    """All sessions of this server, and the timer that declares them dead."""

    def __init__(
        self, pool: WorkerPool, ports: SessionPorts, heartbeat_ms: int = 5000,
        timeout_ms: int = 30_000,
    ) -> None:  # fmt: skip
        self.pool = pool
        self.ports = ports
        # a worker beating at the interval must never look silent: at least three beats per timeout
        self.heartbeat_ms = max(1, min(heartbeat_ms, timeout_ms // 3))
        self.timeout_ms = timeout_ms
        self.sessions: dict[str, WorkerSession] = {}
        self._changed = trio.Event()
        self._pending_uncertain: dict[str, tuple[float, str]] = {}  # token -> (due, reason)
        self._next_wake = 0.0  # when the liveness timer looks next
        self.recovering = False  # after a restart, while executions with tokens come back
        self.server_tag = ""  # shared mode: this server's id, which names its sessions

    def connect(
        self, send: Send, close: Close | None = None, bound_worker_id: str | None = None,
        send_ack: SendAck | None = None, send_task: SendTask | None = None,
    ) -> Connection:  # fmt: skip
        """A new connection; feed it every decoded message. ``bound_worker_id``: the worker
        its credentials name; it may register as no other. ``send_ack`` sends a result's ack
        and ``send_task`` a task without its model (the gateway encodes them at once); by
        default the ``Ack`` and the ``Task`` are ``send``'s."""
        close = close or (lambda code, reason: None)
        connection = Connection(self, send, close, send_ack, send_task)
        connection.bound_worker_id = bound_worker_id
        return connection

    def adopt(
        self, session_id: str, worker_id: str, task: TaskFields, dispatched_at_ms: int
    ) -> None:
        """After a restart: a task held by a session that may come back within the timeout.
        In shared mode, a session another server named cannot come back here (the shared queue
        adopts those of another server first: ``TaskSharing.readopt``): the attempt is
        uncertain now."""
        if self.server_tag and session_id not in self.sessions and not self._ours(session_id):
            reason = f"worker `{worker_id}` was connected to a server that stopped"
            self._pending_uncertain[task["token"]] = (trio.current_time(), reason)
            self._poke()
            return
        if session_id not in self.sessions:
            session = WorkerSession(session_id, worker_id, "", "", [], orphan=True)
            session.expires_at = trio.current_time() + self.timeout_ms / 1000
            self.sessions[session_id] = session
            self._poke()
        self.pool.adopt(session_id, worker_id, task, dispatched_at_ms)

    def new_session_id(self) -> str:
        """A fresh session id (naming this server in shared mode)."""
        tag = f"{self.server_tag}-" if self.server_tag else ""
        return f"s-{tag}{secrets.token_hex(8)}"

    def _ours(self, session_id: str) -> bool:
        return session_id.startswith(f"s-{self.server_tag}-")

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
                self.ports.mark_uncertain(token, reason)
            else:
                wake = min(wake, due)
        return wake

    def _die(self, session: WorkerSession, why: str) -> None:
        """The session is over: its tokens become uncertain once the timeout has passed since
        their dispatch too."""
        self.sessions.pop(session.id, None)
        held = self.pool.end(session.id)
        if session.connection is not None:  # connected but silent: the worker is hung
            session.connection.session = None
            session.connection.close(4001, "session timed out")
            session.connection = None
        reason = f"worker `{session.worker_id}` {why}"
        log.warning("worker session died", extra={"orbit": {
            "worker_id": session.worker_id, "session": session.id, "why": why,
            "inflight": len(held),
        }})  # fmt: skip
        clock = self.ports.clock
        now_ms = clock.now_ms()
        for lost in held:
            due_ms = max(now_ms, lost.since_ms + self.timeout_ms)
            self._pending_uncertain[lost.token] = (clock.deadline(due_ms), reason)
        self._poke()

    def unregister(self, session: WorkerSession) -> None:
        """The worker said goodbye: its tasks are redelivered at once."""
        log.info("worker unregistered", extra={"orbit": {
            "worker_id": session.worker_id, "session": session.id,
        }})  # fmt: skip
        self.sessions.pop(session.id, None)
        for held in self.pool.end(session.id):
            self.ports.mark_uncertain(held.token, "worker unregistered")

    def disconnected(self, session: WorkerSession) -> None:
        """The connection closed without goodbye: the session may be resumed until it times out."""
        session.connection = None
        session.expires_at = trio.current_time() + self.timeout_ms / 1000
        self.pool.disconnect(session.id)
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
        session.expires_at = self.ports.clock.seconds() + self.timeout_ms / 1000
        if session.expires_at < self._next_wake:
            self._poke()


class Connection:
    """The protocol of one connection: registration, results, heartbeats, credit, goodbye."""

    def __init__(
        self, manager: SessionManager, send: Send, close: Close, send_ack: SendAck | None = None,
        send_task: SendTask | None = None,
    ) -> None:  # fmt: skip
        self.manager = manager
        self.send = send
        self.close = close
        self.send_ack = send_ack or self._send_ack_model
        self.send_task = send_task or self._send_task_model
        self.session: WorkerSession | None = None
        self.ever_registered = False
        self.bound_worker_id: str | None = None
        self._touched_ms = -TOUCH_INTERVAL_MS  # when handle() last noted a sign of life

    async def handle(self, message: wire.WorkerMessage) -> None:
        """Answer one decoded message."""
        if isinstance(message, wire.Register):
            await self._register(message)
            return
        session = self.session
        if session is None:
            self._error("NOT_REGISTERED", "register before sending anything else", message.id)
            return
        manager = self.manager
        manager.seen(session)
        self._touched_ms = now = manager.ports.clock.now_ms()
        await _best_effort(manager.ports.touch_worker(session.worker_id, now))
        await _HANDLERS[type(message)](self, session, message)

    def report_soon(self, message: wire.Complete | wire.Fail, done: Callable[[], None]) -> bool:
        """A result handled as :meth:`handle` would, without a task waiting for its verdict:
        the answer is sent, and ``done`` called, once the execution has recorded it. False,
        with nothing done, when :meth:`handle` must carry it (no session yet, the worker's
        sign of life is due to be written, the execution lives elsewhere or is not loaded).
        A sign of life that is due is left to this result's :meth:`handle` alone: the results
        that follow it before that runs are handed on (a burst read at once took the awaiting
        path whole, a task and two waits each, once a second)."""
        session = self.session
        manager = self.manager
        report = manager.ports.report_result_nowait
        if session is None or report is None:
            return False
        now = manager.ports.clock.now_ms()
        if now - self._touched_ms >= TOUCH_INTERVAL_MS:
            self._touched_ms = now  # the handle() that takes this result writes it
            return False

        def answered(verdict: Verdict | OrbitError) -> None:  # in the execution's actor
            try:
                self._answer(message, verdict)
            except Exception:  # the actor that recorded the result must not crash for it
                log.exception("answering a result failed; closing the worker's connection")
                self.close(1011, "internal error")
            finally:
                done()

        output, failure = _outcome(message)
        if not report(message.token, session.worker_id, output, failure, answered):
            return False
        manager.seen(session)
        return True

    def closed(self) -> None:
        """The transport closed; a session not unregistered stays resumable until it times out."""
        if self.session is not None and self.session.connection is self:
            self.manager.disconnected(self.session)
        self.session = None

    def _error(self, code: str, message: str, ref: str | int | None) -> None:
        self.send(wire.ErrorMessage(code=code, message=message, ref=ref))

    # -- messages -----------------------------------------------------------------------------
    async def _on_heartbeat(self, session: WorkerSession, message: wire.Heartbeat) -> None:
        cancelled = list(self.manager.pool.cancelled(session.id))
        self.send(wire.HeartbeatAck(cancel=cancelled, ref=message.id))

    async def _on_credit(self, session: WorkerSession, message: wire.Credit) -> None:
        self.manager.pool.set_capacity(session.id, message.concurrency)
        self.send(wire.CreditAck(concurrency=message.concurrency, ref=message.id))

    async def _on_unregister(self, session: WorkerSession, message: wire.Unregister) -> None:
        self.manager.unregister(session)
        self.session = None
        self.send(wire.Unregistered(ref=message.id))

    async def _on_result(self, session: WorkerSession, message: wire.Complete | wire.Fail) -> None:
        """Route a result to its execution, which frees the slot when it records it."""
        output, failure = _outcome(message)
        try:
            verdict: Verdict | OrbitError = await self.manager.ports.report_result(
                message.token, session.worker_id, output, failure
            )
        except OrbitError as exc:
            verdict = exc
        self._answer(message, verdict)

    def _answer(self, message: wire.Complete | wire.Fail, verdict: Verdict | OrbitError) -> None:
        """The ack of a result, or the error frame of its refusal."""
        if isinstance(verdict, OrbitError):
            self._error(verdict.code, verdict.message, message.id)
            return
        if verdict.accepted:
            crash_point("result-before-ack")
        self.send_ack(verdict.token, verdict.accepted, verdict.reason, message.id)

    def _send_ack_model(
        self, token: str, accepted: bool, reason: str | None, ref: str | int | None
    ) -> None:
        fields = {"type": "ack", "token": token, "accepted": accepted, "reason": reason, "ref": ref}
        self.send(unchecked(wire.Ack, fields, _ACK_GIVEN))  # one per result: not validated

    def _send_task_model(self, task: TaskFields) -> None:
        self.send(task_model(task))

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
        manager = self.manager
        manager.seen(session)
        ports = manager.ports
        now = ports.clock.now_ms()
        contracts = [{"task_name": t, "contract_version": v} for t, v in session.contracts]
        await _best_effort(
            ports.record_worker(
                WorkerRecord(message.worker_id, message.runtime, message.sdk, contracts, now, now)
            )
        )
        self.send(wire.Registered(
            worker_session_id=session.id, heartbeat_interval_ms=manager.heartbeat_ms,
            session_timeout_ms=manager.timeout_ms, resumed=resumed,
            warnings=warnings + _version_warnings(session.contracts, ports.task_versions),
            ref=message.id,
        ))  # fmt: skip
        log.info("worker registered", extra={"orbit": {
            "worker_id": session.worker_id, "session": session.id, "resumed": resumed,
            "concurrency": message.concurrency,
        }})  # fmt: skip
        pool = manager.pool
        if resumed:  # a task frame may have been lost with the connection (or the server)
            for task in list(pool.pushed(session.id)):
                self.send_task(resent(task))
        cancelled = pool.cancelled(session.id)
        if cancelled:
            self.send(wire.Cancel(tokens=list(cancelled), reason=next(iter(cancelled.values()))))
        pool.connect(
            session.id, session.worker_id, session.runtime, session.contracts,
            message.concurrency, self.send, self.send_task,
        )  # fmt: skip

    def _open(self, message: wire.Register) -> tuple[WorkerSession, bool, list[str]]:
        manager = self.manager
        contracts = [(c.task_name, c.contract_version) for c in message.contracts]
        wanted = message.resume_session_id
        previous = manager.sessions.get(wanted) if wanted else None
        if previous is not None and previous.worker_id == message.worker_id:
            if previous.connection is not None and previous.connection is not self:
                previous.connection.session = None
                previous.connection.close(4000, "session resumed elsewhere")
                manager.pool.disconnect(previous.id)
            previous.runtime, previous.sdk = message.runtime, message.sdk
            previous.contracts, previous.orphan = contracts, False
            return previous, True, []
        if wanted and previous is None and manager.recovering:
            # its tokens belong to executions not back yet: they join it as they come back
            session = WorkerSession(
                wanted, message.worker_id, message.runtime, message.sdk, contracts
            )
            manager.sessions[session.id] = session
            return session, True, []
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
            manager.new_session_id(), message.worker_id, message.runtime, message.sdk, contracts
        )
        manager.sessions[session.id] = session
        return session, False, warnings


def _outcome(message: wire.Complete | wire.Fail) -> tuple[Any, ErrorInfo | None]:
    """A result's output, or its failure as history records it."""
    if isinstance(message, wire.Complete):
        return message.output, None
    e = message.error
    return None, ErrorInfo(code=e.code, message=e.message, retryable=e.retryable, details=e.details)


async def _best_effort(write: Awaitable[None]) -> None:
    """The worker registry is what ``GET /v1/workers`` shows, not what the protocol needs: a
    store that cannot write it now (a full disk) must not refuse a registration or drop the
    message that came with a sign of life."""
    try:
        await write
    except StorageError as exc:
        log.warning("could not record a worker's registration or sign of life: %s", exc)


_Handler = Callable[[Connection, WorkerSession, Any], Awaitable[None]]
_HANDLERS: dict[type[wire.WorkerMessage], _Handler] = {
    wire.Complete: Connection._on_result,
    wire.Fail: Connection._on_result,
    wire.Heartbeat: Connection._on_heartbeat,
    wire.Credit: Connection._on_credit,
    wire.Unregister: Connection._on_unregister,
}
"""One handler per message a registered session may send (``register`` comes first)."""


MAX_WORKER_ID = 200
MAX_CONTRACTS = 1000
MAX_CONCURRENCY = 10_000
"""What one registration may claim (http-api.md, "Connection limits")."""


def _refusal(message: wire.Register) -> tuple[str, str] | None:
    if not message.worker_id:
        return ("INVALID_REQUEST", "worker_id is required")
    if len(message.worker_id) > MAX_WORKER_ID:
        return ("INVALID_REQUEST", f"worker_id is longer than {MAX_WORKER_ID} characters")
    if not message.contracts:
        return ("INVALID_REQUEST", "a worker must announce at least one task contract")
    if len(message.contracts) > MAX_CONTRACTS:
        return ("INVALID_REQUEST", f"a worker may announce at most {MAX_CONTRACTS} contracts")
    if not 1 <= message.concurrency <= MAX_CONCURRENCY:
        return ("INVALID_REQUEST", f"concurrency must be 1 to {MAX_CONCURRENCY:,}")
    for contract in message.contracts:
        name = contract.task_name
        if name.startswith("workflow:"):
            return ("RESERVED_TASK", f"`{name}` names a child workflow, not a worker task")
        if name.startswith("orbit."):
            return ("RESERVED_TASK", f"`{name}` is a built-in task")
    return None


def _version_warnings(
    contracts: list[tuple[str, str]], task_versions: Callable[[str], set[str]]
) -> list[str]:
    warnings = []
    for task, version in contracts:
        used = task_versions(task)
        if used and version not in used:
            listed = ", ".join(sorted(used))
            warnings.append(
                f"`{task}` is announced at version {version} but registered workflows use "
                f"{listed}; this worker will not receive those tasks"
            )
    return warnings
