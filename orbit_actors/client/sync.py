"""The synchronous client."""

from __future__ import annotations

import time
from types import TracebackType
from typing import TypeVar

import httpx

from ..api import calls
from ..api.calls import MAX_WAIT, Call
from ..api.models import ExecutionResult
from .answers import ApiError, read_answer, unreachable
from .endpoint import Endpoints, SyncSender
from .settings import Settings

T = TypeVar("T")


class Client(Endpoints, SyncSender):
    """A synchronous client of one Orbit server (``ORBIT_URL``/``ORBIT_TOKEN`` by default):
    every endpoint a method answering the API's model; ``verify`` is a CA file (PEM) to trust,
    or a bool. Use it as a context manager, or :meth:`close` it."""

    def __init__(
        self,
        url: str | None = None,
        *,
        token: str | None = None,
        timeout: float = 30.0,
        verify: str | bool = True,
    ) -> None:
        self.settings = Settings.of(url, token, verify, timeout)
        self.url = self.settings.url
        self._http = httpx.Client(**self.settings.client_options())

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def send(self, call: Call[T]) -> T:
        """Send one call of :mod:`orbit_actors.api.calls`; its answer, or :class:`ApiError`."""
        try:
            response = self._http.request(**self.settings.request_options(call))
        except httpx.HTTPError as exc:
            raise unreachable(self.url, exc) from None
        return read_answer(call, response)

    def result(self, execution_id: str, timeout: float = 3600.0) -> ExecutionResult:
        """The execution's result (``status``, ``output``, ``error``, …) once it has finished,
        waiting up to ``timeout`` s in long polls of at most a minute; raises ApiError
        ``WAIT_TIMEOUT`` after that."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                return self.send(calls.wait(execution_id, max(0.0, min(MAX_WAIT, left))))
            except ApiError as exc:
                if exc.code != "WAIT_TIMEOUT" or left <= MAX_WAIT:
                    raise

    def ready(self) -> bool:
        """True once the server has recovered and answers."""
        try:
            return self._http.get("/readyz").status_code == 200
        except httpx.HTTPError:
            return False
