"""The asynchronous client, for trio and asyncio alike (httpx runs on both through anyio)."""

from __future__ import annotations

import time
from types import TracebackType
from typing import TypeVar

import httpx

from ..api import calls
from ..api.calls import MAX_WAIT, Call
from ..api.models import ExecutionResult
from .answers import ApiError, read_answer, unreachable
from .endpoint import AsyncSender, Endpoints
from .settings import Settings

T = TypeVar("T")


class AsyncClient(Endpoints, AsyncSender):
    """An asynchronous client of one Orbit server: the same methods as
    :class:`~orbit_actors.client.Client`, each awaited. Use it as an async context manager, or
    :meth:`aclose` it. ``limits`` are httpx's connection-pool limits (many requests in flight
    need more than its default 100 connections)."""

    def __init__(
        self,
        url: str | None = None,
        *,
        token: str | None = None,
        timeout: float = 30.0,
        verify: str | bool = True,
        limits: httpx.Limits | None = None,
    ) -> None:
        self.settings = Settings.of(url, token, verify, timeout)
        self.url = self.settings.url
        self._http = httpx.AsyncClient(
            **self.settings.client_options(), limits=limits or httpx.Limits()
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def send(self, call: Call[T]) -> T:
        """Send one call of :mod:`orbit_actors.api.calls`; its answer, or :class:`ApiError`."""
        try:
            response = await self._http.request(**self.settings.request_options(call))
        except httpx.HTTPError as exc:
            raise unreachable(self.url, exc) from None
        return read_answer(call, response)

    async def result(self, execution_id: str, timeout: float = 3600.0) -> ExecutionResult:
        """The execution's result once it has finished, waiting up to ``timeout`` s in long
        polls of at most a minute; raises ApiError ``WAIT_TIMEOUT`` after that."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                return await self.send(calls.wait(execution_id, max(0.0, min(MAX_WAIT, left))))
            except ApiError as exc:
                if exc.code != "WAIT_TIMEOUT" or left <= MAX_WAIT:
                    raise

    async def ready(self) -> bool:
        """True once the server has recovered and answers."""
        try:
            return (await self._http.get("/readyz")).status_code == 200
        except httpx.HTTPError:
            return False
