"""A server message is written as the bytes its pydantic model encodes to, absent fields left
out: :func:`~orbit_actors.wire.messages.encode_text` writes the fields without the model's
schema (and :func:`~orbit_actors.wire.messages.encode_ack` an ack, and
:func:`~orbit_actors.wire.messages.encode_task` a task's fields, without its model), so each is
checked against the model's own serializer for many generated values."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from orbit_actors.views.unchecked import unchecked
from orbit_actors.wire import messages as wire

TEXT = st.text(st.characters(codec="utf-8"))  # lone surrogates are not UTF-8
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)  # fmt: skip
OPTIONAL_INT = st.none() | st.integers(min_value=0, max_value=2**63)
REF = st.none() | st.integers(min_value=-(2**63), max_value=2**63) | TEXT


def _by_model(message: wire.ServerMessage) -> str:
    """The model's own encoding, absent optional fields excluded (the way it was written)."""
    data = message.__dict__
    exclude = {k for k in ("ref", "deadline_ms", "timeout_ms", "reason") if data.get(k, 0) is None}
    if data.get("resent") is False:
        exclude.add("resent")
    serializer = message.__pydantic_serializer__
    return serializer.to_json(message, exclude=exclude or None).decode()


@settings(max_examples=300, deadline=None)
@given(
    strings=st.lists(TEXT, min_size=8, max_size=8), task_input=JSON_VALUES,
    attempt=st.integers(min_value=1, max_value=2**70), redelivery=st.booleans(),
    deadline_ms=OPTIONAL_INT, timeout_ms=OPTIONAL_INT, resent=st.booleans(),
)  # fmt: skip
def test_a_task_is_written_as_its_model_encodes_it(
    strings: list[str], task_input: Any, attempt: int, redelivery: bool,
    deadline_ms: int | None, timeout_ms: int | None, resent: bool,
) -> None:  # fmt: skip
    names = ("token", "execution_id", "workflow", "workflow_version", "step_id", "task_name",
             "contract_version", "idempotency_key")  # fmt: skip
    task = wire.Task(
        **dict(zip(names, strings, strict=True)), input=task_input, attempt=attempt,
        redelivery=redelivery, deadline_ms=deadline_ms, timeout_ms=timeout_ms, resent=resent,
    )  # fmt: skip
    text = wire.encode_text(task)
    assert text == _by_model(task)
    assert text == _by_model(
        unchecked(wire.Task, dict(task.__dict__), frozenset(task.model_fields_set))
    )
    assert ("resent" in json.loads(text)) is resent
    # as the server holds it (actors/pool.py): its fields, encoded without the model
    assert wire.encode_task(task.as_fields()).decode() == text


@settings(max_examples=200, deadline=None)
@given(token=TEXT, accepted=st.booleans(), reason=st.none() | TEXT, ref=REF)
def test_an_ack_is_written_as_its_model_encodes_it(
    token: str, accepted: bool, reason: str | None, ref: str | int | None
) -> None:
    ack = wire.Ack(token=token, accepted=accepted, reason=reason, ref=ref)
    assert wire.encode_text(ack) == _by_model(ack)
    assert wire.encode_ack(token, accepted, reason, ref).decode() == _by_model(ack)


def test_nan_and_infinities_in_a_task_input_are_written_null_as_the_model_writes_them() -> None:
    task_input = {"nan": math.nan, "inf": [math.inf, -math.inf], "big": 10**30, "f": 1e16}
    task = wire.Task(
        token="t", execution_id="x", workflow="w", workflow_version="1", step_id="a",
        task_name="t", contract_version="1", input=task_input, idempotency_key="x:a",
        attempt=1, redelivery=False,
    )  # fmt: skip
    text = wire.encode_text(task)
    assert text == _by_model(task)
    assert '"input":{"nan":null,"inf":[null,null],"big":1000000000000000000000000000000,' in text


@given(
    message=st.sampled_from([
        wire.Registered(worker_session_id="s", heartbeat_interval_ms=1, session_timeout_ms=2),
        wire.Registered(
            worker_session_id="s", heartbeat_interval_ms=1, session_timeout_ms=2, resumed=True,
            warnings=["é\n"], ref=3,
        ),
        wire.HeartbeatAck(cancel=["a", "b"]), wire.HeartbeatAck(ref="h"),
        wire.Cancel(tokens=["a"], reason="cancelled"), wire.CreditAck(concurrency=4, ref=1),
        wire.Unregistered(), wire.Unregistered(ref=0),
        wire.ErrorMessage(code="INVALID_MESSAGE", message='"x"\t'),
        wire.ErrorMessage(code="C", message="m", ref="r"),
    ])
)  # fmt: skip
def test_every_other_server_message_is_written_as_its_model_encodes_it(
    message: wire.ServerMessage,
) -> None:
    assert wire.encode_text(message) == _by_model(message)
