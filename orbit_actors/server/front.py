"""The server in front of the application: Orbit's own transport (:mod:`..http`, the default)
or hypercorn through ASGI (``--server hypercorn``). Either one binds, reports the URLs it
answers on, stops accepting on a drain and lets the requests in flight finish.

The API and the gateway keep their own limits under both (nested JSON, registration bounds, the
outbox of a worker). The connection limits are each server's: the transport keeps every one of
http-api.md's; hypercorn keeps its own (its keep-alive, read and graceful timeouts, HTTP/2
stream and WebSocket message caps, set here from the same :class:`~..http.Limits`), and has no
connection cap or write timeout of its own: under it a burst waits in the listen backlog (set as
large as the transport's) and, past the open-file limit, trio retries the accept.
"""

from __future__ import annotations

import logging
import ssl
from typing import TYPE_CHECKING, Literal, Protocol

import trio

from ..errors import InvalidRequestError
from ..http import Application, Limits, Server, open_listeners
from ..http.asgi import AsgiApp
from ..http.http1 import MAX_HEAD_BYTES
from .api import MAX_WAIT_SECONDS
from .app import refusal

if TYPE_CHECKING:
    from .serve import ServerOptions

log = logging.getLogger("orbit.server")

ServerKind = Literal["orbit", "hypercorn"]
LISTEN_BACKLOG = 0xFFFF
"""Connections the kernel holds before they are accepted (it lowers this to ``somaxconn``), as
trio's listeners ask: a burst waits there rather than being dropped."""


class Front(Protocol):
    """A server of the application, started in a nursery its caller owns."""

    async def start(self, nursery: trio.Nursery) -> list[str]:
        """Serve in ``nursery``; the URLs it answers on."""
        ...

    def stop_accepting(self) -> None:
        """Take no new connections; the open ones go on."""
        ...

    async def drain(self, grace: float) -> None:
        """Wait up to ``grace`` seconds for the requests in flight."""
        ...


class OrbitFront:
    """Orbit's transport on listeners bound when it is opened."""

    def __init__(self, server: Server, listeners: list[trio.abc.Listener[trio.abc.Stream]],
                 urls: list[str]) -> None:  # fmt: skip
        self._server = server
        self._listeners = listeners
        self._urls = urls

    async def start(self, nursery: trio.Nursery) -> list[str]:
        """Accept on the listeners; connections are served in ``nursery``."""
        await nursery.start(self._server.serve, self._listeners, nursery)
        return self._urls

    def stop_accepting(self) -> None:
        """Close the listeners."""
        self._server.stop_accepting()

    async def drain(self, grace: float) -> None:
        """Close idle connections, let busy ones finish for ``grace`` seconds."""
        await self._server.drain(grace)


class HypercornFront:
    """hypercorn's trio worker serving the application through :class:`~..http.asgi.AsgiApp`."""

    def __init__(self, app: AsgiApp, config: object) -> None:
        self._app = app
        self._config = config
        self._shutdown = trio.Event()
        self._done = trio.Event()

    async def start(self, nursery: trio.Nursery) -> list[str]:
        """Serve until :meth:`stop_accepting`; hypercorn reports the URLs once bound."""
        urls: list[str] = await nursery.start(self._serve)
        return urls

    async def _serve(self, task_status: trio.TaskStatus[list[str]]) -> None:
        from hypercorn.trio import serve

        try:
            await serve(self._app, self._config, shutdown_trigger=self._shutdown.wait,  # type: ignore[arg-type]
                        task_status=task_status)  # fmt: skip
        finally:
            self._done.set()

    def stop_accepting(self) -> None:
        """Start hypercorn's graceful shutdown."""
        self._shutdown.set()

    async def drain(self, grace: float) -> None:
        """Wait for hypercorn's graceful shutdown (bounded by its ``graceful_timeout``)."""
        with trio.move_on_after(grace + 1):
            await self._done.wait()


async def open_front(options: ServerOptions, app: Application, limits: Limits) -> Front:
    """The front ``options.server`` names, for ``app``; Orbit's transport binds at once (a port
    in use fails before the store opens), hypercorn when it starts."""
    if options.server == "hypercorn":
        return HypercornFront(AsgiApp(app, limits, refusal), _hypercorn_config(options, limits))
    listeners, urls = await open_listeners(options.bind, _ssl_context(options))
    return OrbitFront(Server(app, limits, refusal), listeners, urls)


def _hypercorn_config(options: ServerOptions, limits: Limits) -> object:
    try:
        from hypercorn.config import Config
    except ImportError:
        raise InvalidRequestError(
            "--server hypercorn needs hypercorn: pip install 'orbit-actors[hypercorn]'"
        ) from None
    config = Config()
    config.bind = [options.bind]
    config.certfile = str(options.certfile) if options.certfile is not None else None
    config.keyfile = str(options.keyfile) if options.keyfile is not None else None
    config.keep_alive_timeout = limits.keep_alive_timeout
    # hypercorn's read timeout is per read and runs while an answer is awaited too: shorter than
    # the longest wait, it cut `wait=60` long polls off at 30 s (found by the burst test)
    config.read_timeout = int(MAX_WAIT_SECONDS + limits.head_timeout)
    config.graceful_timeout = options.graceful_timeout
    config.h11_max_incomplete_size = MAX_HEAD_BYTES
    config.h2_max_concurrent_streams = 100
    config.websocket_max_message_size = limits.max_message_bytes
    config.backlog = LISTEN_BACKLOG  # hypercorn's 100 would drop a burst's connections
    config.accesslog = None
    config.errorlog = logging.getLogger("orbit.hypercorn")
    return config


def _ssl_context(options: ServerOptions) -> ssl.SSLContext | None:
    if options.certfile is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(options.certfile, options.keyfile)
    context.set_alpn_protocols(["h2", "http/1.1"])
    return context
