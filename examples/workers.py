"""One Python worker serving every task of the example workflows.

    orbit worker examples.workers:worker        (or: python examples/workers.py)

The tasks pretend: they compute a plausible answer from their input and return at once. A charge
over 10,000 is declined (CARD_DECLINED, not retryable), which shows the order saga compensating.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel

from orbit_actors import TaskContext, TaskFailed, Worker

worker = Worker(worker_id="examples", concurrency=64)


def _id(prefix: str, *parts: Any) -> str:
    digest = hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()[:10]
    return f"{prefix}-{digest}"


class Charge(BaseModel):
    order_id: str
    amount: float


class Charged(BaseModel):
    charge_id: str


@worker.task("payments.charge", version="1")
async def charge(ctx: TaskContext, request: Charge) -> Charged:
    if request.amount > 10_000:
        raise TaskFailed("CARD_DECLINED", "the card was declined", retryable=False)
    return Charged(charge_id=_id("ch", ctx.idempotency_key))


@worker.task("payments.refund", version="1")
async def refund(ctx: TaskContext, request: dict[str, Any]) -> dict[str, Any]:
    return {"refund_id": _id("re", ctx.idempotency_key), "charge_id": request.get("charge_id")}


@worker.task("inventory.reserve", version="1")
async def reserve(ctx: TaskContext, line: dict[str, Any]) -> dict[str, Any]:
    return {"reservation_id": _id("rs", ctx.idempotency_key), "sku": line["sku"]}


@worker.task("inventory.release", version="1")
async def release(request: dict[str, Any]) -> dict[str, Any]:
    return {"released": request["reservation_id"]}


@worker.task("shipping.ship", version="1")
async def ship(ctx: TaskContext, request: dict[str, Any]) -> dict[str, Any]:
    return {"tracking": _id("trk", request["order_id"])}


@worker.task("ops.alert", version="1")
def alert(request: dict[str, Any]) -> dict[str, Any]:  # a plain function runs in a thread
    print(f"ops alert: order {request.get('order_id')}: {request.get('code')}", flush=True)
    return {"alerted": True}


@worker.task("mail.send", version="1")
async def send_mail(request: dict[str, Any]) -> dict[str, Any]:
    return {"sent_to": request.get("to"), "subject": request.get("subject")}


@worker.task("purchasing.order", version="1")
async def place_order(ctx: TaskContext, request: dict[str, Any]) -> dict[str, Any]:
    return {"po_number": _id("po", request["request_id"])}


@worker.task("images.resize", version="2")
async def resize(request: dict[str, Any]) -> dict[str, Any]:
    name = str(request["source"]).rsplit("/", 1)[-1]
    return {"url": f"https://cdn.example/{request['width']}/{name}", "bytes": 1000 + len(name)}


@worker.task("images.summarize", version="1")
async def summarize(request: dict[str, Any]) -> dict[str, Any]:
    return {"count": request["count"]}


@worker.task("tick.work", version="1")
async def tick(request: dict[str, Any]) -> dict[str, Any]:
    return {"remaining": request["remaining"]}


@worker.task("billing.render", version="1")
async def render(ctx: TaskContext, request: dict[str, Any]) -> dict[str, Any]:
    return {"invoice_id": _id("inv", request["order_id"])}


@worker.task("ledger.close", version="1")
async def close_ledger(request: dict[str, Any]) -> dict[str, Any]:
    return {"closed": request["month"]}


if __name__ == "__main__":
    worker.run()
