"""The tasks the console's tests run besides the examples' own: an echo, and a task that raises
(so an execution fails with a worker's stack trace)."""

from __future__ import annotations

from typing import Any

from orbit_actors import Worker

worker = Worker(worker_id="console-tests", concurrency=64)


@worker.task("console.echo", version="1")
async def echo(request: dict[str, Any]) -> dict[str, Any]:
    return request


@worker.task("console.crash", version="1")
async def crash(request: dict[str, Any]) -> dict[str, Any]:
    raise ValueError(f"cannot crash {request.get('what', 'this')}")
