"""The API client: one typed method per endpoint of http-api.md, over httpx.

Every refusal is raised as :class:`ApiError` carrying the API's ``code``, ``message`` and HTTP
``status``; a server that cannot be reached is ``ApiError("UNAVAILABLE", …)``. Answers are the
API's JSON objects (plain dicts), exactly as http-api.md shapes them.

::

    with Client("http://127.0.0.1:7233") as orbit:
        orbit.deploy(Path("order.yaml").read_text())
        started = orbit.start("order", input={"amount": 5})
        print(orbit.wait(started["execution_id"])["status"])
"""

from __future__ import annotations

import json
import os
import ssl
import time
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

MAX_WAIT = 60.0  # the server answers a wait within a minute at most

DEFAULT_URL = "http://127.0.0.1:7233"


class ApiError(Exception):
    """The server refused a call (or could not be reached): ``code``, ``message``, ``status``."""

    def __init__(self, code: str, message: str, status: int = 0) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


def _segment(value: str) -> str:
    return quote(value, safe="@:")


class Client:
    """A synchronous client of one Orbit server (``ORBIT_URL``/``ORBIT_TOKEN`` by default);
    ``verify`` is a CA file (PEM) to trust, or a bool."""

    def __init__(
        self,
        url: str | None = None,
        *,
        token: str | None = None,
        timeout: float = 30.0,
        verify: str | bool = True,
    ) -> None:
        self.url = (url or os.environ.get("ORBIT_URL") or DEFAULT_URL).rstrip("/")
        token = token if token is not None else os.environ.get("ORBIT_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        trust: ssl.SSLContext | bool = (
            ssl.create_default_context(cafile=verify) if isinstance(verify, str) else verify
        )
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout, verify=trust)

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    # -- definitions ---------------------------------------------------------------------
    def deploy(self, source: str | dict[str, Any]) -> dict[str, Any]:
        """Register a definition (YAML text, or the IR as a dict); the answer has ``created``."""
        if isinstance(source, dict):
            return self._call("POST", "/v1/definitions", json_body=source)
        return self._call(
            "POST", "/v1/definitions", content=source, content_type="application/yaml"
        )

    def definitions(self) -> list[dict[str, Any]]:
        """Every registered definition."""
        found: list[dict[str, Any]] = self._call("GET", "/v1/definitions")["definitions"]
        return found

    def definition(self, name: str, version: str | None = None) -> dict[str, Any]:
        """One definition with its IR (the latest version when none is given)."""
        path = f"/v1/definitions/{_segment(name)}"
        if version is not None:
            path += f"/{_segment(version)}"
        return self._call("GET", path)

    # -- executions ----------------------------------------------------------------------
    def start(
        self,
        workflow: str,
        *,
        input: Any = None,
        version: str | None = None,
        execution_id: str | None = None,
        wait: float | None = None,
    ) -> dict[str, Any]:
        """Start an execution: ``{execution_id, created}``; with ``wait`` (seconds, at most 60)
        the answer comes once it has finished (or ``wait`` has passed) and adds ``status``,
        ``output`` and ``error`` — one request for the result."""
        body: dict[str, Any] = {"workflow": workflow}
        if input is not None:
            body["input"] = input
        if version is not None:
            body["version"] = version
        if execution_id is not None:
            body["execution_id"] = execution_id
        if wait is None:
            return self._call("POST", "/v1/executions", json_body=body)
        params = {"wait": wait}
        return self._call(
            "POST", "/v1/executions", json_body=body, params=params, timeout=wait + 10
        )

    def executions(
        self,
        *,
        status: str | None = None,
        workflow: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """One page: ``{executions, next_cursor}``."""
        params = {"status": status, "workflow": workflow, "limit": limit, "cursor": cursor}
        return self._call("GET", "/v1/executions", params=params)

    def describe(self, execution_id: str) -> dict[str, Any]:
        """An execution's detail."""
        return self._call("GET", self._execution(execution_id))

    def history(self, execution_id: str, run: int | None = None) -> dict[str, Any]:
        """``{execution_id, run, events}``."""
        return self._call("GET", self._execution(execution_id, "/history"), params={"run": run})

    def wait(self, execution_id: str, timeout: float = 30.0) -> dict[str, Any]:
        """The summary with ``output`` and ``error`` once finished; raises ApiError
        ``WAIT_TIMEOUT`` after ``timeout`` s (at most 60 per request)."""
        path = self._execution(execution_id, "/wait")
        return self._call("GET", path, params={"timeout": timeout}, timeout=timeout + 10)

    def result(self, execution_id: str, timeout: float = 3600.0) -> dict[str, Any]:
        """The wait answer (``status``, ``output``, ``error``, …) once the execution has
        finished, waiting up to ``timeout`` s in long polls of at most a minute; raises ApiError
        ``WAIT_TIMEOUT`` after that."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                return self.wait(execution_id, timeout=max(0.0, min(MAX_WAIT, left)))
            except ApiError as exc:
                if exc.code != "WAIT_TIMEOUT" or left <= MAX_WAIT:
                    raise

    def cancel(self, execution_id: str, reason: str | None = None) -> dict[str, Any]:
        """Cancel; answers the detail."""
        body = {"reason": reason} if reason is not None else {}
        return self._call("POST", self._execution(execution_id, "/cancel"), json_body=body)

    def resume(self, execution_id: str) -> dict[str, Any]:
        """Resume a quarantined execution; answers the detail."""
        return self._call("POST", self._execution(execution_id, "/resume"))

    def signal(self, execution_id: str, name: str, payload: Any = None) -> int:
        """Send a signal; returns its seq."""
        path = self._execution(execution_id, f"/signals/{_segment(name)}")
        seq: int = self._call("POST", path, json_body={"payload": payload})["seq"]
        return seq

    def query(self, execution_id: str, name: str) -> Any:
        """A query's value."""
        path = self._execution(execution_id, f"/queries/{_segment(name)}")
        return self._call("GET", path).get("value")

    # -- schedules -------------------------------------------------------------------------
    def create_schedule(
        self,
        schedule_id: str,
        cron: str,
        workflow: str,
        *,
        timezone: str = "UTC",
        version: str | None = None,
        input: Any = None,
        overlap: str = "skip",
        paused: bool = False,
    ) -> dict[str, Any]:
        """Create a schedule; answers it with ``created`` (False: it existed, same fields)."""
        body = {
            "schedule_id": schedule_id, "cron": cron, "workflow": workflow, "timezone": timezone,
            "version": version, "input": input, "overlap": overlap, "paused": paused,
        }  # fmt: skip
        return self._call("POST", "/v1/schedules", json_body=body)

    def schedules(self) -> list[dict[str, Any]]:
        """Every schedule."""
        found: list[dict[str, Any]] = self._call("GET", "/v1/schedules")["schedules"]
        return found

    def schedule(self, schedule_id: str) -> dict[str, Any]:
        """One schedule, with its next occurrences and last executions."""
        return self._call("GET", self._schedule(schedule_id))

    def delete_schedule(self, schedule_id: str) -> None:
        """Delete a schedule."""
        self._call("DELETE", self._schedule(schedule_id))

    def pause_schedule(self, schedule_id: str) -> dict[str, Any]:
        """Pause a schedule; answers it."""
        return self._call("POST", self._schedule(schedule_id, "/pause"))

    def resume_schedule(self, schedule_id: str) -> dict[str, Any]:
        """Resume a schedule (what was missed while paused does not fire); answers it."""
        return self._call("POST", self._schedule(schedule_id, "/resume"))

    def trigger_schedule(self, schedule_id: str) -> str:
        """Start an occurrence now; returns its execution id."""
        answer = self._call("POST", self._schedule(schedule_id, "/trigger"))
        execution_id: str = answer["execution_id"]
        return execution_id

    # -- workers and tasks ---------------------------------------------------------------
    def workers(self) -> list[dict[str, Any]]:
        """Every worker ever registered."""
        found: list[dict[str, Any]] = self._call("GET", "/v1/workers")["workers"]
        return found

    def complete_task(self, token: str, output: Any = None) -> dict[str, Any]:
        """Complete a task over HTTP: the ack."""
        path = f"/v1/tasks/{_segment(token)}/complete"
        return self._call("POST", path, json_body={"output": output})

    def fail_task(
        self, token: str, code: str, message: str = "", *, retryable: bool = True
    ) -> dict[str, Any]:
        """Fail a task over HTTP: the ack."""
        error = {"code": code, "message": message, "retryable": retryable}
        return self._call("POST", f"/v1/tasks/{_segment(token)}/fail", json_body={"error": error})

    def ready(self) -> bool:
        """True once the server has recovered and answers."""
        try:
            return self._http.get("/readyz").status_code == 200
        except httpx.HTTPError:
            return False

    # -- plumbing ------------------------------------------------------------------------
    @staticmethod
    def _execution(execution_id: str, tail: str = "") -> str:
        return f"/v1/executions/{_segment(execution_id)}{tail}"

    @staticmethod
    def _schedule(schedule_id: str, tail: str = "") -> str:
        return f"/v1/schedules/{_segment(schedule_id)}{tail}"

    def _call(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        content: str | None = None,
        content_type: str | None = None,
        params: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        headers = {"Content-Type": content_type} if content_type else None
        query = {k: v for k, v in (params or {}).items() if v is not None}
        extra: dict[str, Any] = {"timeout": timeout} if timeout is not None else {}
        try:
            response = self._http.request(
                method, path, json=json_body, content=content, headers=headers, params=query,
                **extra,
            )  # fmt: skip
        except httpx.HTTPError as exc:
            raise ApiError("UNAVAILABLE", f"cannot reach the server at {self.url}: {exc}") from None
        return _answer(response)


def _answer(response: httpx.Response) -> dict[str, Any]:
    if response.status_code == 204:
        return {}
    try:
        body = response.json() if response.content else None
    except json.JSONDecodeError:
        body = None
    if response.is_success and isinstance(body, dict):
        return body
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        raise ApiError(str(error.get("code")), str(error.get("message")), response.status_code)
    raise ApiError("HTTP_ERROR", f"HTTP {response.status_code}", response.status_code)
