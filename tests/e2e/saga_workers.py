"""The order saga's worker for the end-to-end tests of operating executions. Every task start
is appended to the file ``E2E_LOG`` names as one JSON line (task, idempotency key); with
``SHIP_BROKEN=1`` the ``ship`` task has a bug and fails."""

from __future__ import annotations

import json
import os
from typing import Any

from orbit_actors import TaskContext, Worker

worker = Worker(concurrency=16)


def _record(task: str, ctx: TaskContext) -> None:
    log = os.environ.get("E2E_LOG")
    if log:
        with open(log, "a") as out:
            out.write(json.dumps({"task": task, "key": ctx.idempotency_key}) + "\n")


@worker.task("payments.charge", version="1")
async def charge(ctx: TaskContext, request: dict[str, Any]) -> dict[str, Any]:
    _record("charge", ctx)
    return {"charge_id": f"ch-{request['order_id']}"}


@worker.task("payments.refund", version="1")
async def refund(ctx: TaskContext, request: dict[str, Any]) -> dict[str, Any]:
    _record("refund", ctx)
    return {"refunded": request["charge_id"]}


@worker.task("inventory.reserve", version="1")
async def reserve(ctx: TaskContext, line: dict[str, Any]) -> dict[str, Any]:
    _record("reserve", ctx)
    return {"reservation_id": f"rs-{line['sku']}"}


@worker.task("inventory.release", version="1")
async def release(ctx: TaskContext, request: dict[str, Any]) -> dict[str, Any]:
    _record("release", ctx)
    return {"released": request["reservation_id"]}


@worker.task("shipping.ship", version="1")
async def ship(ctx: TaskContext, request: dict[str, Any]) -> dict[str, Any]:
    _record("ship", ctx)
    if os.environ.get("SHIP_BROKEN") == "1":
        raise KeyError("carrier")  # the bug: an unexpected error, retried
    return {"tracking": f"trk-{request['order_id']}"}


@worker.task("ops.alert", version="1")
async def alert(ctx: TaskContext, request: dict[str, Any]) -> dict[str, Any]:
    _record("alert", ctx)
    return {"alerted": True}
