"""The worker the end-to-end tests run as a subprocess. ``E2E_LOG`` names a file where each task
start is appended as one JSON line (worker, idempotency key, attempt, redelivery)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import trio

from orbit_actors import TaskContext, TaskFailed, Worker

worker = Worker(concurrency=int(os.environ.get("E2E_CONCURRENCY", "256")))


def _record(ctx: TaskContext, *, cancelled: bool = False) -> None:
    log = os.environ.get("E2E_LOG")
    if log:
        line = {"worker": worker.worker_id, "key": ctx.idempotency_key, "attempt": ctx.attempt,
                "redelivery": ctx.redelivery, "token": ctx.token}  # fmt: skip
        if cancelled:
            line["cancelled"] = True
        with open(log, "a") as out:
            out.write(json.dumps(line) + "\n")


@worker.task("echo", version="1")
async def echo(ctx: TaskContext, value: Any) -> Any:
    _record(ctx)
    return value


@worker.task("gate", version="1")
async def gate(ctx: TaskContext, request: dict[str, Any]) -> dict[str, Any]:
    """Waits until the file ``request["path"]`` exists (the test opens the gate)."""
    _record(ctx)
    path = Path(request["path"])
    while not path.exists():
        await trio.sleep(0.02)
    return {"passed": True, "worker": worker.worker_id}


@worker.task("fail", version="1")
async def fail(request: dict[str, Any]) -> None:
    raise TaskFailed(request.get("code", "BROKEN"), "it broke", retryable=False)


@worker.task("sync", version="1")
def sync_task(request: dict[str, Any]) -> dict[str, Any]:
    return {"thread": True, **request}


@worker.task("hold", version="1")
async def hold(ctx: TaskContext, request: dict[str, Any]) -> dict[str, Any]:
    """Runs until the server cancels it; the cancel is logged like a start, with
    ``"cancelled": true``."""
    _record(ctx)
    try:
        await trio.sleep_forever()
    except trio.Cancelled:
        _record(ctx, cancelled=True)
        raise
    return request


@worker.task("nap", version="1")
async def nap(ctx: TaskContext, request: dict[str, Any]) -> dict[str, Any]:
    """Sleeps ``request["seconds"]``, then echoes the request."""
    _record(ctx)
    await trio.sleep(float(request.get("seconds", 0.2)))
    return request
