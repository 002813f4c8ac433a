"""A message the server makes without validation is the model a validated one is: equal to it,
encoded to the same bytes at the edge, and sent again the same way."""

from __future__ import annotations

from typing import Any

from orbit_actors.actors.outgoing import unchecked
from orbit_actors.wire import messages as wire

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
