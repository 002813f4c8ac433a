"""The built-in runner of ``http`` units (the task ``orbit.http.request``), with httpx.

Only with the adapter enabled (``--enable-http-adapter``); otherwise every attempt fails with
``ADAPTER_DISABLED``. 408, 429, 5xx and network errors are retryable ``HTTP_ERROR``; other 4xx are
non-retryable ``HTTP_STATUS`` with ``details.status``; only a final 2xx succeeds, with
``{status, headers, body}`` (the body parsed when it is JSON). Redirects are followed, at most 5.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import trio

from ..decide.invocation import HttpInvocation
from ..history.events import ErrorInfo

Report = Callable[[str, Any, ErrorInfo | None], Awaitable[None]]
RETRYABLE_STATUS = frozenset({408, 429})


class HttpRunner:
    """Runs http units in the runtime's nursery; ``cancel`` stops one by its token."""

    def __init__(self, nursery: trio.Nursery, report: Report, *, enabled: bool) -> None:
        self._nursery = nursery
        self._report = report
        self.enabled = enabled
        self._running: dict[str, trio.CancelScope] = {}

    def run(self, token: str, unit: HttpInvocation) -> None:
        """Start the request of ``unit``; its outcome is reported by token."""
        self._nursery.start_soon(self._run, token, unit)

    def cancel(self, token: str) -> None:
        """Stop the request of ``token`` if it is still running."""
        scope = self._running.pop(token, None)
        if scope is not None:
            scope.cancel()

    async def _run(self, token: str, unit: HttpInvocation) -> None:
        if not self.enabled:
            message = (
                "the built-in http adapter is disabled; start the server with --enable-http-adapter"
            )
            await self._report(token, None, ErrorInfo(code="ADAPTER_DISABLED", message=message))
            return
        with trio.CancelScope() as scope:
            self._running[token] = scope
            output, failure = await request(unit)
        self._running.pop(token, None)
        if not scope.cancelled_caught:
            await self._report(token, output, failure)


async def request(unit: HttpInvocation) -> tuple[Any, ErrorInfo | None]:
    """Perform the request; returns (output, None) on a 2xx, else (None, error)."""
    spec = unit.request
    timeout = unit.timeout_ms / 1000 if unit.timeout_ms else 30.0
    body = spec.get("body")
    try:
        async with httpx.AsyncClient(
            follow_redirects=True, max_redirects=5, timeout=timeout
        ) as client:
            response = await client.request(
                str(spec.get("method", "GET")), str(spec.get("url", "")),
                headers={str(k): str(v) for k, v in (spec.get("headers") or {}).items()},
                json=body if body is not None else None,
            )  # fmt: skip
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
        return None, ErrorInfo(
            code="HTTP_ERROR", message=f"request failed: {exc!r}", retryable=True
        )
    return _outcome(response)


def _outcome(response: httpx.Response) -> tuple[Any, ErrorInfo | None]:
    status = response.status_code
    if 200 <= status < 300:
        return {"status": status, "headers": dict(response.headers), "body": _body(response)}, None
    details = {"status": status}
    if status in RETRYABLE_STATUS or status >= 500:
        return None, ErrorInfo(
            code="HTTP_ERROR", message=f"HTTP {status}", retryable=True, details=details
        )
    return None, ErrorInfo(
        code="HTTP_STATUS", message=f"HTTP {status}", retryable=False, details=details
    )


def _body(response: httpx.Response) -> Any:
    if "json" in response.headers.get("content-type", ""):
        try:
            return response.json()
        except json.JSONDecodeError:
            pass
    return response.text
