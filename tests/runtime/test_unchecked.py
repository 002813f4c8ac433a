"""A model the server makes without validation is the model a validated one is: equal to it,
encoded to the same bytes at the edge (and a task sent again the same way)."""

from __future__ import annotations

from typing import Any

import trio
from trio.testing import MockClock

from orbit_actors.runtime import Runtime
from orbit_actors.testing import FakeWorker
from orbit_actors.views import ExecutionResult
from orbit_actors.views.unchecked import unchecked
from orbit_actors.wire import messages as wire

from .conftest import workflow

ONE = workflow("""
steps: [{id: a, task: t, input: "${input}"}]
output: "${steps.a.output}"
""")

GIVEN: dict[str, Any] = {
    "token": "0f1e2d3c4b5a6978@x1", "execution_id": "x1", "workflow": "three",
    "workflow_version": "1.0.0", "step_id": "a", "task_name": "t", "contract_version": "1",
    "input": {"n": [1, "two", None]}, "idempotency_key": "x1:a", "attempt": 2,
    "redelivery": True, "deadline_ms": 1_700_000_000_000, "timeout_ms": None,
}  # fmt: skip


def _both() -> tuple[wire.Task, wire.Task]:
    made = unchecked(wire.Task, {"type": "task", **GIVEN, "resent": False}, frozenset(GIVEN))
    return made, wire.Task(**GIVEN)


def test_an_unchecked_task_equals_the_validated_one_and_encodes_to_the_same_bytes() -> None:
    made, validated = _both()
    assert made == validated
    assert made.model_fields_set == validated.model_fields_set
    assert wire.encode_text(made) == wire.encode_text(validated)
    assert wire.encode(made) == wire.encode(validated)


def test_an_unchecked_task_is_sent_again_as_the_validated_one_is() -> None:
    made, validated = _both()
    again = made.again()
    assert again.resent and not made.resent
    assert wire.encode_text(again) == wire.encode_text(validated.again())


def test_an_unchecked_ack_equals_the_validated_one_and_encodes_to_the_same_bytes() -> None:
    given = {"token": "0f1e2d3c4b5a6978@x1", "accepted": False, "reason": "duplicate", "ref": 7}
    made = unchecked(wire.Ack, {"type": "ack", **given}, frozenset(given))
    validated = wire.Ack(**given)
    assert made == validated and made.model_fields_set == validated.model_fields_set
    assert wire.encode_text(made) == wire.encode_text(validated)


async def test_the_wait_answer_equals_its_validated_model_and_dumps_the_same(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(ONE)
    async with trio.open_nursery() as nursery:
        await nursery.start(FakeWorker(runtime).serve)
        await runtime.start("wf", input={"n": 3}, execution_id="x")
        answer = await runtime.wait("x", 60)
        nursery.cancel_scope.cancel()
    validated = ExecutionResult(**answer.model_dump())
    assert answer == validated and answer.output == {"n": 3}
    assert answer.model_dump_json() == validated.model_dump_json()
    assert answer.model_fields_set == validated.model_fields_set
