"""Running the server: one process serving the HTTP API and the worker gateway on one port
(Orbit's transport, :mod:`..http`, or hypercorn: :mod:`.front`), on a SQLite or PostgreSQL
store, until SIGTERM or SIGINT.

The port is open (``/healthz`` answers) while the runtime opens; ``/readyz`` and the API answer
once the store's wake-up index is loaded (executions come back as they are needed; those with
work in flight come back in the background). On a signal the server
drains: it stops being ready, closes worker connections with 1001 so their sessions can be
resumed (here after a restart, or elsewhere), lets the requests in flight finish, and
closes the runtime, whose commits in flight complete before the store closes. With
``--otlp-endpoint``, spans buffered for the collector are flushed last.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import resource
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import trio

from ..actors.clock import STEP_MS, Clock
from ..errors import InvalidRequestError
from ..runtime import RuntimeConfig, open_runtime, tune_gc
from ..store.base import Store
from ..store.cluster import Cluster
from ..store.sqlite import open_sqlite_store

if TYPE_CHECKING:
    from ..observe.tracing import Tracer
from ..http.application import Limits
from .app import AppState, OrbitApp
from .auth import Credentials
from .front import ServerKind, open_front

log = logging.getLogger("orbit.server")

DEFAULT_BIND = "127.0.0.1:7233"
CLOCK_CHECK_SECONDS = 10.0
FRAME_MARGIN = 64 * 1024  # a message's envelope around its largest payload


@dataclass(frozen=True)
class ServerOptions:
    """Everything ``orbit server`` takes."""

    db: Path = Path("orbit.db")
    database_url: str | None = None  # PostgreSQL instead of the SQLite file ``db``
    bind: str = DEFAULT_BIND
    synchronous: Literal["full", "normal"] = "full"
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)
    graceful_timeout: float = 5.0
    credentials: Credentials = field(default_factory=Credentials)
    insecure: bool = False  # listen beyond loopback without both kinds of token
    certfile: Path | None = None
    keyfile: Path | None = None
    otlp_endpoint: str | None = None  # traces go to this OTLP/HTTP collector
    max_connections: int = 10_000  # served at once; more wait in the listen backlog
    server: ServerKind = "orbit"  # or "hypercorn": the same application through ASGI
    lease_time: float = 10.0  # seconds; shared mode (database_url) only

    @property
    def database(self) -> str:
        """The database served, as a log line names it (never with a password)."""
        if self.database_url is None:
            return str(self.db)
        from ..store.postgres import describe

        return describe(self.database_url)

    @property
    def max_message_bytes(self) -> int:
        """The largest request body or WebSocket frame taken."""
        return self.runtime.limits.max_payload_bytes + FRAME_MARGIN


async def serve(
    options: ServerOptions,
    *,
    on_ready: Callable[[list[str]], None] = lambda urls: None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until SIGTERM/SIGINT (or cancellation); ``on_ready`` gets the bound URLs once the
    runtime has recovered."""
    check_exposure(options)
    state = AppState(credentials=options.credentials)
    limits = Limits(max_body_bytes=options.max_message_bytes,
                    max_message_bytes=options.max_message_bytes,
                    max_connections=fit_descriptors(options.max_connections))  # fmt: skip
    front = await open_front(options, OrbitApp(state), limits)
    async with (
        open_store(options) as store,
        open_tracer(options.otlp_endpoint) as tracer,
        trio.open_nursery() as connections,
    ):
        urls = await front.start(connections)
        async with (
            open_membership(options, store, urls[0]) as cluster,
            open_runtime(
                store, options.runtime, tracer=tracer, cluster=cluster, address=urls[0]
            ) as runtime,
        ):
            tune_gc()
            state.runtime = runtime
            log.info("ready on %s (database %s)", ", ".join(urls), options.database)
            on_ready(urls)
            task_status.started(urls)
            connections.start_soon(follow_system_clock, runtime.clock)
            await _until_signal()
            log.info("shutting down: draining worker connections and requests")
            state.draining = True
            front.stop_accepting()
            runtime.sessions.close_connections(1001, "server shutting down; resume the session")
            await front.drain(options.graceful_timeout)
            connections.cancel_scope.cancel()


def open_store(options: ServerOptions) -> AbstractAsyncContextManager[Store]:
    """The store the options name: the PostgreSQL database of ``database_url``, or else the
    SQLite file ``db``."""
    if options.database_url is not None:
        from ..store.postgres import open_postgres_store

        return open_postgres_store(options.database_url)
    return open_sqlite_store(options.db, synchronous=options.synchronous)


def open_membership(
    options: ServerOptions, store: Store, address: str
) -> AbstractAsyncContextManager[Cluster | None]:
    """On PostgreSQL, join the servers sharing the database (a lease of ``lease_time``);
    on SQLite there is no other server: None."""
    if options.database_url is None:
        return contextlib.nullcontext(None)
    from ..store.postgres import PostgresStore

    assert isinstance(store, PostgresStore)
    return store.join(address, options.lease_time)


@asynccontextmanager
async def open_tracer(endpoint: str | None) -> AsyncIterator[Tracer | None]:
    """A tracer exporting to ``endpoint`` (None without one); what it buffered is flushed on
    the way out."""
    if endpoint is None:
        yield None
        return
    from ..observe.tracing import Tracer, open_exporter

    log.info("sending traces to %s", endpoint)
    tracer = Tracer(open_exporter(endpoint))
    try:
        yield tracer
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(tracer.shutdown)


async def follow_system_clock(clock: Clock, every: float = CLOCK_CHECK_SECONDS) -> None:
    """Every ``every`` seconds, follow a forward step of the system clock (so schedules keep
    their wall times) and say, once, when it stepped back (see :mod:`..actors.clock`)."""
    told_back = False
    while True:
        await trio.sleep(every)  # a periodic job, like a heartbeat: nothing signals a step
        ahead = clock.resync()
        if ahead > STEP_MS:
            log.warning("the system clock stepped forward by %.1f s; Orbit follows", ahead / 1000)
        elif ahead < -STEP_MS and not told_back:
            told_back = True
            log.warning(
                "the system clock stepped back by %.1f s; Orbit keeps its own time until it "
                "restarts, so that no history goes back in time",
                -ahead / 1000,
            )


async def _until_signal() -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            return


DESCRIPTORS_SPARE = 64  # files the store, logs and listeners need beside the connections


def fit_descriptors(max_connections: int) -> int:
    """Raise the soft limit on open files to the hard one, then serve at most what it leaves
    beside :data:`DESCRIPTORS_SPARE`: at the cap new connections wait in the listen backlog,
    while a process out of descriptors could not accept anyone (EMFILE)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft != hard:
        wanted = max_connections + DESCRIPTORS_SPARE if hard == resource.RLIM_INFINITY else hard
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
            soft = max(soft, wanted)
    if soft == resource.RLIM_INFINITY or soft - DESCRIPTORS_SPARE >= max_connections:
        return max_connections
    fitted = max(1, soft - DESCRIPTORS_SPARE)
    log.warning("only %d open files are allowed: serving at most %d connections at once, not "
                "%d (more wait in the listen backlog)", soft, fitted, max_connections)  # fmt: skip
    return fitted


def is_loopback(bind: str) -> bool:
    """True for an address only this machine can reach."""
    host = bind.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_exposure(options: ServerOptions) -> None:
    """Refuse to listen beyond loopback without an admin token and a worker token, unless
    ``insecure`` says the risk is accepted."""
    if is_loopback(options.bind) or options.insecure:
        return
    missing = [flag for flag, present in (
        ("--admin-token", options.credentials.admin_required),
        ("--worker-token", options.credentials.workers_required),
    ) if not present]  # fmt: skip
    if missing:
        raise InvalidRequestError(
            f"refusing to listen on {options.bind} without {' and '.join(missing)}: anyone who "
            "can reach it could start, read and cancel workflows or act as a worker; set "
            f"{' and '.join(missing)}, or pass --insecure to accept the risk"
        )
