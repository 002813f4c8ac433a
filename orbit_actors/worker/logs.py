"""What the worker SDK tells its operator (logger ``orbit.worker``): connected (to which
server, which session, which contracts), a connection that failed or was lost (why, and when
the next try is), a task that raised (with its traceback), draining; and why a server refused
the worker, in words a person can act on.

Each line is one function here, so the wording lives in one place and tests read it."""

from __future__ import annotations

import errno
import logging
from collections.abc import Iterable

from pydantic import ValidationError

from ..http import HandshakeError, WebSocketClosedError

log = logging.getLogger("orbit.worker")

REFUSED_STATUSES = {401, 403}
"""Handshake answers that no retry mends: the worker stops and says why."""


def connected(url: str, worker_id: str, session_id: str, resumed: bool,
              contracts: Iterable[tuple[str, str]]) -> None:  # fmt: skip
    """The worker registered with a server."""
    served = ", ".join(f"{name}@{version}" for name, version in sorted(contracts))
    log.info(
        "connected to %s as %s (session %s%s); serving %s",
        url, worker_id, session_id, ", resumed" if resumed else "", served,
    )  # fmt: skip


def retrying(
    url: str, was_connected: bool, exc: BaseException, delay: float, next_url: str
) -> None:
    """A connection failed to open, or was lost; the next try is in ``delay`` seconds."""
    why = describe(exc, url)
    where = "" if next_url == url else f" to {next_url}"
    if was_connected:
        log.warning("connection to %s lost: %s; reconnecting%s in %.1f s", url, why, where, delay)
    else:
        log.warning("cannot connect to %s: %s; next try%s in %.1f s", url, why, where, delay)


def task_raised(task: str, execution_id: str, step_id: str, attempt: int) -> None:
    """A task function raised (called from its ``except`` block: the traceback is logged)."""
    log.warning(
        "task %s raised in execution %s, step %s, attempt %d (it will be retried if its "
        "retry policy allows)", task, execution_id, step_id, attempt, exc_info=True,
    )  # fmt: skip


def unreadable(message: str, exc: ValidationError) -> None:
    """A server message this SDK cannot read was skipped (a newer server's message type, or a
    faulty server): the session goes on."""
    errors = exc.errors()
    where, why = "the message", str(exc)
    if errors:
        where = ".".join(str(part) for part in errors[0]["loc"]) or where
        why = errors[0]["msg"]
    log.warning(
        "skipped a server message this worker cannot read (%s: %s): %.200s", where, why, message
    )


def draining(running: int) -> None:
    """The worker takes no new tasks and finishes the running ones."""
    log.info("draining: taking no new tasks, finishing %d running (Ctrl-C again stops now)",
             running)  # fmt: skip


def refusal(exc: HandshakeError, token_given: bool) -> str | None:
    """Why a server refused the connection for good (401, 403), or None when a retry may
    mend it."""
    if exc.status == 401:
        if token_given:
            return "401: the worker token is wrong (ORBIT_WORKER_TOKEN or Worker(token=...))"
        return "401: the server wants a worker token (set ORBIT_WORKER_TOKEN)"
    if exc.status == 403:
        return "403: this worker token may not register this worker id (ORBIT_WORKER_ID)"
    return None


def describe(exc: BaseException, url: str) -> str:
    """A failed or lost connection in words: refused, unreachable, closed, timed out."""
    address = url.split("://", 1)[-1]
    if _refused(exc):
        return f"connection refused at {address} (is the server running?)"
    if isinstance(exc, WebSocketClosedError):
        return f"closed ({exc.code} {exc.reason})".replace(" )", ")")
    if isinstance(exc, HandshakeError):
        status = f"HTTP {exc.status}: " if exc.status else ""
        return f"the server did not accept the WebSocket: {status}{exc}"
    if isinstance(exc, TimeoutError) or type(exc).__name__ == "TooSlowError":
        return f"no answer from {address} in time"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror} ({address})"
    return str(exc) or type(exc).__name__


def _refused(exc: BaseException) -> bool:
    """True when every address tried refused the connection (trio's ``OSError`` for a failed
    connect carries each attempt's error as its cause)."""
    if getattr(exc, "errno", None) == errno.ECONNREFUSED:
        return True
    cause = exc.__cause__
    if isinstance(cause, BaseExceptionGroup):
        return all(_refused(inner) for inner in cause.exceptions)
    return cause is not None and _refused(cause)
