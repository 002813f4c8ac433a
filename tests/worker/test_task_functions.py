"""A task function that can never suspend (an ``async def`` with no ``await``, ``async for``
or ``async with``) runs to its end in the receiving task, without a task of its own; what it
answers, logs and sees is what a task of its own would (``worker/tasks.py``)."""

from __future__ import annotations

import contextvars
from typing import Any

import pytest
import trio
from pydantic import BaseModel

from orbit_actors import TaskContext, TaskFailed
from orbit_actors.wire import Task
from orbit_actors.wire.messages import encode_text
from orbit_actors.wire.server_fields import TaskFields, decode_server_fields
from orbit_actors.worker.tasks import TaskFunction

SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="unset")


class Order(BaseModel):
    order_id: str


def pushed(input: Any = None, attempt: int = 1) -> TaskFields:
    """A pushed task as the worker reads it (the frame's fields, decoded at the edge)."""
    task = Task(
        token="t@e1", execution_id="e1", workflow="w", workflow_version="1.0.0", step_id="s",
        task_name="t", contract_version="1", input=input, idempotency_key="e1/1/s",
        attempt=attempt, redelivery=False,
    )  # fmt: skip
    fields = decode_server_fields(encode_text(task))
    assert fields["type"] == "task"
    return fields


async def never_awaits(order: Order) -> dict[str, str]:
    SEEN.set(order.order_id)
    return {"receipt": f"r-{order.order_id}"}


async def awaits(order: Order) -> dict[str, str]:
    await trio.lowlevel.checkpoint()
    return {"receipt": f"r-{order.order_id}"}


async def opens_a_scope(order: Order) -> None:
    async with trio.open_nursery():
        pass


async def loops(orders: Any) -> None:
    async for _ in orders:
        pass


class Service:
    async def method(self, order: Order) -> None:
        return None


def plain(order: Order) -> None:
    return None


@pytest.mark.parametrize(
    ("function", "at_once"),
    [(never_awaits, True), (awaits, False), (opens_a_scope, False), (loops, False),
     (Service().method, False), (plain, False)],
)  # fmt: skip
def test_only_an_async_def_with_no_suspension_point_runs_at_once(
    function: Any, at_once: bool
) -> None:
    assert TaskFunction.wrap("t", "1", function).runs_at_once is at_once


async def test_run_now_answers_what_a_task_of_its_own_answers() -> None:
    function = TaskFunction.wrap("t", "1", never_awaits)
    assert function.run_now(pushed({"order_id": "o-1"})) == {"output": {"receipt": "r-o-1"}}
    assert function.run_now(pushed({"order_id": "o-1"})) == await function.run_pushed(
        pushed({"order_id": "o-1"})
    )


async def test_run_now_runs_in_a_copy_of_the_callers_context() -> None:
    TaskFunction.wrap("t", "1", never_awaits).run_now(pushed({"order_id": "o-2"}))
    assert SEEN.get() == "unset"


async def test_run_now_turns_bad_input_and_raised_errors_into_the_same_failures() -> None:
    async def declines(order: Order) -> None:
        raise TaskFailed("DECLINED", "no", retryable=False)

    async def breaks(ctx: TaskContext, order: Order) -> None:
        raise ValueError(f"bad {ctx.attempt}")

    invalid = TaskFunction.wrap("t", "1", never_awaits).run_now(pushed({"order_id": 5}))
    assert invalid["error"]["code"] == "INVALID_TASK_INPUT"
    declined = TaskFunction.wrap("t", "1", declines).run_now(pushed({"order_id": "o"}))
    assert declined == {"error": {"code": "DECLINED", "message": "no", "retryable": False}}
    broken = TaskFunction.wrap("t", "1", breaks).run_now(pushed({"order_id": "o"}, attempt=3))
    assert broken["error"]["code"] == "ValueError" and broken["error"]["message"] == "bad 3"
    assert "ValueError: bad 3" in broken["error"]["details"]["traceback"]
