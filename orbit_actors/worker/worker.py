"""The Python worker: connects to ``/v1/workers/connect``, registers its task contracts, runs
the tasks the server pushes and reports their results (worker-protocol.md).

Tasks run in a nursery that outlives connections: when the connection drops, running tasks go
on, their results wait in an outbox, and the worker reconnects (jittered exponential backoff)
and resumes its session, so those results are accepted as late results. A result leaves the
outbox only once the server has acknowledged it (it is durable then); one the server could not
record (``STORAGE_ERROR``: a full disk, a database failing over) is sent again after a backoff.
A cancel from the server cancels the task's scope. ``run()`` drains on Ctrl-C or SIGTERM: no
new tasks, the running ones finish (up to a grace period), then the worker unregisters.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import signal
import ssl
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any

import trio
from pydantic import Field, TypeAdapter, ValidationError
from pydantic_core import to_json

from .._version import __version__
from ..http import HandshakeError
from ..wire import messages as wire
from ..wire import server_fields as fields
from ..wire.server_fields import decode_server_fields
from . import logs
from .connection import CONNECTION_LOST, Connection, ConnectionClosed, open_connection
from .tasks import TaskFunction

log = logging.getLogger("orbit.worker")

_SERVER_MESSAGE: TypeAdapter[wire.ServerMessage] = TypeAdapter(
    Annotated[wire.ServerMessage, Field(discriminator="type")]
)
DEFAULT_WORKER_URL = "ws://127.0.0.1:7233"


RESULT_RETRIED_ON = frozenset({"STORAGE_ERROR", "OWNER_UNAVAILABLE"})
"""Refusals of a result that say nothing was recorded and the server may manage later: the
result stays in the outbox and is sent again (jittered backoff up to 5 s) until acknowledged."""


class WorkerRefused(Exception):
    """The server refused the registration (the message says why); retrying will not help."""


def default_url() -> str:
    """``ORBIT_WORKER_URL``, else ``ORBIT_URL`` with its scheme turned to ws(s), else local.
    Either may list several servers sharing one store, separated by commas."""
    if url := os.environ.get("ORBIT_WORKER_URL"):
        return url
    if url := os.environ.get("ORBIT_URL"):
        return ",".join("ws" + u[4:] if u.startswith("http") else u for u in url.split(","))
    return DEFAULT_WORKER_URL


class _Backoff:
    """Jittered exponential delays: 0.1 s doubling up to 5 s."""

    def __init__(self, first: float = 0.1, cap: float = 5.0) -> None:
        self.first, self.cap, self.current = first, cap, first

    def next(self) -> float:
        delay = random.uniform(self.current / 2, self.current)
        self.current = min(self.cap, self.current * 2)
        return delay

    def reset(self) -> None:
        self.current = self.first


class Worker:
    """A worker process serving task functions registered with :meth:`task`."""

    def __init__(
        self,
        url: str | None = None,
        *,
        worker_id: str | None = None,
        concurrency: int = 16,
        token: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
        drain_grace: float = 30.0,
    ) -> None:
        # several URLs (comma-separated): servers sharing one store, tried in turn on each
        # reconnection, so a worker whose server stopped goes on with another
        self.urls = [u.strip().rstrip("/") for u in (url or default_url()).split(",") if u.strip()]
        self.url = self.urls[0]
        self.worker_id = worker_id or os.environ.get("ORBIT_WORKER_ID") or _default_worker_id()
        self.concurrency = concurrency
        self.token = token if token is not None else os.environ.get("ORBIT_WORKER_TOKEN")
        cafile = os.environ.get("ORBIT_CA_FILE")
        if ssl_context is None and cafile and self.url.startswith("wss:"):
            ssl_context = ssl.create_default_context(cafile=cafile)
        self.ssl_context = ssl_context
        self.drain_grace = drain_grace
        self.session_id: str | None = None
        self.functions: dict[tuple[str, str], TaskFunction] = {}
        self._running: dict[str, trio.CancelScope] = {}
        self._outbox: dict[str, dict[str, Any]] = {}  # results sent but not yet acknowledged
        self._idle: trio.Event | None = None
        self._ws: Connection | None = None
        self._stopping = False
        self._unregistered: trio.Event | None = None
        self._retry_backoff = _Backoff()  # results the server could not record yet

    def task(self, name: str, *, version: str = "1") -> Callable[[Callable[..., Any]], Any]:
        """Register the decorated function as ``name@version``."""

        def register(function: Callable[..., Any]) -> Callable[..., Any]:
            self.functions[(name, version)] = TaskFunction.wrap(name, version, function)
            return function

        return register

    # -- running ---------------------------------------------------------------------------
    def run(self) -> None:
        """Serve until Ctrl-C or SIGTERM, then drain and unregister (a second signal stops at
        once)."""
        try:
            trio.run(self._run_until_signal)
        except* WorkerRefused as refused:
            raise refused.exceptions[0] from None  # one exception, not a group, for callers

    async def _run_until_signal(self) -> None:
        async with trio.open_nursery() as nursery:
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                nursery.start_soon(self.serve)
                async for _ in signals:
                    if self._stopping:
                        break
                    nursery.start_soon(self._drain_then_stop, nursery.cancel_scope)
            nursery.cancel_scope.cancel()

    async def _drain_then_stop(self, scope: trio.CancelScope) -> None:
        await self.drain()
        scope.cancel()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Connect, register and serve tasks, reconnecting whenever the connection drops;
        ``task_status`` reports the first registration."""
        if not self.functions:
            raise WorkerRefused("register at least one task with @worker.task(...)")
        self._unregistered = trio.Event()
        try:
            async with trio.open_nursery() as tasks:
                await self._reconnecting(tasks, task_status)
        except* WorkerRefused as refused:
            raise refused.exceptions[0] from None  # one exception, not a group, for callers

    async def _reconnecting(self, tasks: trio.Nursery, status: trio.TaskStatus[None]) -> None:
        """Sessions one after another, a jittered backoff between them, until unregistered."""
        assert self._unregistered is not None
        backoff = _Backoff()
        while True:
            failure: BaseException | None = None
            was_connected = False
            try:
                async with self._connect() as ws:
                    await self._session(ws, tasks, status)
            except* WorkerRefused as refused:
                raise refused.exceptions[0] from None
            except* CONNECTION_LOST as lost:
                failure = lost.exceptions[0]
                self._refuse_for_good(failure)
            finally:
                if self._ws is not None:
                    status = trio.TASK_STATUS_IGNORED
                    backoff.reset()
                    was_connected = True
                self._ws = None
            if self._unregistered.is_set():
                tasks.cancel_scope.cancel()
                return
            delay = backoff.next()
            if failure is not None:
                lost_url = self.url
                self._next_url()
                logs.retrying(lost_url, was_connected, failure, delay, self.url)
            await trio.sleep(delay)

    def _refuse_for_good(self, failure: BaseException) -> None:
        """A handshake refused for a reason no retry mends (a wrong token) stops the worker."""
        if isinstance(failure, HandshakeError):
            why = logs.refusal(failure, bool(self.token))
            if why is not None:
                raise WorkerRefused(why)

    def _next_url(self) -> None:
        """The next server to try (the same one when only one is known)."""
        self.url = self.urls[(self.urls.index(self.url) + 1) % len(self.urls)]

    async def drain(self) -> None:
        """Take no new tasks, let running ones finish (up to ``drain_grace``), unregister."""
        self._stopping = True
        logs.draining(len(self._running))
        await self._send({"type": "credit", "concurrency": 0})
        with trio.move_on_after(self.drain_grace):
            await self._wait_idle()
        for scope in self._running.values():
            scope.cancel()
        await self._send({"type": "unregister"})
        assert self._unregistered is not None
        with trio.move_on_after(5):
            await self._unregistered.wait()

    # -- one connection --------------------------------------------------------------------
    def _connect(self) -> AbstractAsyncContextManager[Connection]:
        return open_connection(self.url, self.token, self.ssl_context)

    async def _session(
        self, ws: Connection, tasks: trio.Nursery, status: trio.TaskStatus[None]
    ) -> None:
        registered = await self._register(ws)
        self._ws = ws
        status.started()
        for pending in list(self._outbox.values()):  # results the last connection did not ack
            await self._send(pending)
        if self._stopping:
            await self._send({"type": "credit", "concurrency": 0})
        unregistered = self._unregistered
        assert unregistered is not None
        async with trio.open_nursery() as nursery:
            interval = registered.heartbeat_interval_ms / 1000
            nursery.start_soon(self._heartbeat, interval)
            # answers the socket cannot take at once leave from there: this task reads on
            await nursery.start(ws.flush_queued)
            try:
                while not unregistered.is_set():
                    raw = await ws.receive()
                    try:
                        message = decode_server_fields(raw)
                    except ValidationError as exc:  # a newer or faulty server: not fatal
                        logs.unreadable(raw, exc)
                        continue
                    handler = _HANDLERS.get(message["type"])
                    if handler is not None:
                        handler(self, message, tasks)
            finally:
                nursery.cancel_scope.cancel()

    async def _register(self, ws: Connection) -> wire.Registered:
        contracts = [{"task_name": n, "contract_version": v} for n, v in self.functions]
        register = {
            "type": "register", "worker_id": self.worker_id, "runtime": "python",
            "sdk": f"orbit-python/{__version__}", "concurrency": self.concurrency,
            "contracts": contracts, "resume_session_id": self.session_id,
        }  # fmt: skip
        await ws.send(json.dumps(register))
        with trio.fail_after(30):
            answer = _SERVER_MESSAGE.validate_json(await ws.receive())
        if isinstance(answer, wire.ErrorMessage):
            raise WorkerRefused(f"{answer.code}: {answer.message}")
        assert isinstance(answer, wire.Registered)
        for warning in answer.warnings:
            log.warning("server: %s", warning)
        self.session_id = answer.worker_session_id
        logs.connected(self.url, self.worker_id, answer.worker_session_id, answer.resumed,
                       self.functions)  # fmt: skip
        return answer

    async def _heartbeat(self, interval: float) -> None:
        while True:
            await trio.sleep(interval)
            await self._send({"type": "heartbeat"})

    # -- messages from the server: handled in the receiving task, without waiting -----------
    # each gets the message's fields (``wire.server_fields``: validated as its model would be)
    def _on_task(self, task: fields.TaskFields, tasks: trio.Nursery) -> None:
        """Run a pushed task (the fields of a ``wire.Task``); a task sent again after a resume
        (``resent``) that is already running, or whose result waits for its ack, is not run
        twice (the result is sent again instead). A resent token this worker does not know
        lost its first frame: it runs."""
        token = task["token"]
        if token in self._running:
            return
        if token in self._outbox:
            self._send_soon(self._outbox[token])
            return
        function = self.functions.get((task["task_name"], task["contract_version"]))
        if function is not None and function.runs_at_once:
            self._send_soon(self._keep(token, function.run_now(task)))
            return
        scope = self._running[token] = trio.CancelScope()
        tasks.start_soon(self._run_task, task, function, scope)

    def _on_ack(self, message: fields.AckFields, tasks: trio.Nursery) -> None:
        self._outbox.pop(message["token"], None)
        self._retry_backoff.reset()
        if not message["accepted"]:
            log.info("result for %s not accepted: %s", message["token"], message["reason"])
        self._check_idle()

    def _on_cancel(self, message: fields.CancelFields, tasks: trio.Nursery) -> None:
        self._cancel(message["tokens"])

    def _on_heartbeat_ack(self, message: fields.HeartbeatAckFields, tasks: trio.Nursery) -> None:
        self._cancel(message["cancel"])

    def _on_unregistered(self, message: fields.UnregisteredFields, tasks: trio.Nursery) -> None:
        assert self._unregistered is not None
        self._unregistered.set()  # the session is over

    def _on_error(self, message: fields.ErrorFields, tasks: trio.Nursery) -> None:
        ref, code, text = message["ref"], message["code"], message["message"]
        token = ref if isinstance(ref, str) else None
        if token in self._outbox and code in RESULT_RETRIED_ON:
            log.warning("result for %s not recorded yet (%s): %s; sending it again",
                        token, code, text)  # fmt: skip
            tasks.start_soon(self._send_again, token, self._retry_backoff.next())
        elif token in self._outbox and code == "PAYLOAD_TOO_LARGE":
            self._outbox[token] = _result(token, {"error": {
                "code": "OUTPUT_TOO_LARGE", "message": text, "retryable": False,
            }})  # fmt: skip
            self._send_soon(self._outbox[token])
        elif token in self._outbox:
            log.error("result for %s refused: %s %s", token, code, text)
            self._outbox.pop(token, None)
            self._check_idle()
        else:
            log.warning("server error: %s %s", code, text)

    async def _send_again(self, token: str, delay: float) -> None:
        """A result the server could not record (its store failed) is sent again after a
        backoff, unless it was acknowledged meanwhile (a reconnection sends it too)."""
        await trio.sleep(delay)  # a backoff: the store needs time (space freed, failover)
        if token in self._outbox:
            await self._send(self._outbox[token])

    def _cancel(self, tokens: list[str]) -> None:
        for token in tokens:
            scope = self._running.get(token)
            if scope is not None:
                scope.cancel()

    # -- tasks -----------------------------------------------------------------------------
    async def _run_task(
        self, task: fields.TaskFields, function: TaskFunction | None, scope: trio.CancelScope
    ) -> None:
        token = task["token"]
        with scope:
            try:
                if function is None:
                    missing = f"this worker has no {task['task_name']}@{task['contract_version']}"
                    outcome = {
                        "error": {"code": "UNKNOWN_TASK", "message": missing, "retryable": False}
                    }
                else:
                    outcome = await function.run_pushed(task)
            finally:
                del self._running[token]
        if scope.cancelled_caught:
            self._check_idle()
            return  # the server cancelled it: its slot is already free
        await self._send(self._keep(token, outcome))

    def _keep(self, token: str, outcome: dict[str, Any]) -> dict[str, Any]:
        """The result message of ``outcome``, kept in the outbox until acknowledged."""
        message = self._outbox[token] = _result(token, outcome)
        return message

    async def _send(self, message: dict[str, Any]) -> None:
        ws = self._ws
        if ws is None:
            return  # sent again once reconnected (results) or not needed any more
        await _send_quietly(ws, message)

    def _send_soon(self, message: dict[str, Any]) -> None:
        """Queue ``message`` from the receiving task: it leaves with the next write, at the
        latest before the next read, together with the others queued meanwhile."""
        ws = self._ws
        if ws is not None:
            try:  # noqa: SIM105 (contextlib.suppress's object costs more than the queueing)
                ws.send_nowait(to_json(message).decode())
            except ConnectionClosed:
                pass  # the result stays in the outbox, sent again on the next connection

    async def _wait_idle(self) -> None:
        while self._running or self._outbox:
            self._idle = trio.Event()
            await self._idle.wait()

    def _check_idle(self) -> None:
        if self._idle is not None and not self._running and not self._outbox:
            self._idle.set()


_HANDLERS: dict[str, Callable[[Worker, Any, trio.Nursery], None]] = {  # by the `type` tag
    "task": Worker._on_task,
    "ack": Worker._on_ack,
    "cancel": Worker._on_cancel,
    "heartbeat_ack": Worker._on_heartbeat_ack,
    "error": Worker._on_error,
    "unregistered": Worker._on_unregistered,
}
"""What the receiving task does with each server message, by its ``type`` (the others need
nothing)."""


def _result(token: str, outcome: dict[str, Any]) -> dict[str, Any]:
    if "error" in outcome:
        return {"type": "fail", "id": token, "token": token, "error": outcome["error"]}
    return {"type": "complete", "id": token, "token": token, "output": outcome["output"]}


async def _send_quietly(ws: Connection, message: dict[str, Any]) -> None:
    """Send ``message`` as compact JSON (pydantic-core's encoder: one call, a third of what
    Python's JSON encoder cost); a closed connection is no error: results stay in the outbox and
    are sent again later."""
    with contextlib.suppress(ConnectionClosed):
        await ws.send(to_json(message).decode())


def _default_worker_id() -> str:
    return f"{os.uname().nodename}-{os.getpid()}"


__all__ = ["Worker", "WorkerRefused", "default_url"]
