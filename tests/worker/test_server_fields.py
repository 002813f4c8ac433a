"""The worker reads server messages into dicts of their fields (``wire/server_fields.py``), with
the checks of the protocol's models: whatever a frame holds, it gets exactly the model's fields
and defaults, or is refused with exactly the model's errors."""

from __future__ import annotations

import json
from typing import Annotated, Any, get_type_hints

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field, TypeAdapter, ValidationError

from orbit_actors.wire import messages as wire
from orbit_actors.wire.server_fields import FIELDS_OF, decode_server_fields

_MODELS: TypeAdapter[wire.ServerMessage] = TypeAdapter(
    Annotated[wire.ServerMessage, Field(discriminator="type")]
)
_TYPES = ["registered", "task", "ack", "heartbeat_ack", "cancel", "credit_ack", "unregistered",
          "error", "from_a_newer_server"]  # fmt: skip
_NAMES = sorted(
    {name for kind in wire.ServerMessage.__args__ for name in kind.model_fields} - {"type"}
)
_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False),
    st.sampled_from(["", "t1", "true", "1", "x@e"]), st.lists(st.sampled_from(["t1", 2]), max_size=2),
    st.dictionaries(st.sampled_from(["n", "x"]), st.integers(0, 2), max_size=2),
)  # fmt: skip


def _read(frame: str, read: Any) -> tuple[str, Any]:
    try:
        return "read", read(frame)
    except ValidationError as exc:
        return "refused", exc.errors(include_url=False)


@given(
    kind=st.sampled_from(_TYPES),
    fields=st.dictionaries(st.sampled_from(_NAMES), _VALUES, max_size=len(_NAMES)),
)
def test_a_frame_is_read_or_refused_exactly_as_the_models_read_it(
    kind: str, fields: dict[str, Any]
) -> None:
    frame = json.dumps({"type": kind, **fields})
    assert _read(frame, decode_server_fields) == _read(
        frame, lambda f: _MODELS.validate_json(f).model_dump()
    )


@pytest.mark.parametrize("frame", ["not json", "[1]", '"task"', '{"no": 1}', '{"type": 5}', ""])
def test_what_is_not_a_message_is_refused_as_the_models_refuse_it(frame: str) -> None:
    assert _read(frame, decode_server_fields) == _read(frame, _MODELS.validate_json)
    assert _read(frame, decode_server_fields)[0] == "refused"


def test_a_task_has_every_field_with_the_models_defaults() -> None:
    frame = wire.encode_text(
        wire.Task(
            token="t1", execution_id="e1", workflow="w", workflow_version="1", step_id="a",
            task_name="n", contract_version="1", input={"n": 1}, idempotency_key="e1/1/a",
            attempt=1, redelivery=False,
        )
    )  # fmt: skip
    assert decode_server_fields(frame) == {
        "type": "task", "token": "t1", "execution_id": "e1", "workflow": "w",
        "workflow_version": "1", "step_id": "a", "task_name": "n", "contract_version": "1",
        "input": {"n": 1}, "idempotency_key": "e1/1/a", "attempt": 1, "redelivery": False,
        "deadline_ms": None, "timeout_ms": None, "resent": False,
    }  # fmt: skip


@pytest.mark.parametrize("model", list(FIELDS_OF), ids=lambda model: model.__name__)
def test_each_typed_dict_names_and_types_exactly_its_models_fields(model: Any) -> None:
    hints = get_type_hints(FIELDS_OF[model])
    assert hints == {name: field.annotation for name, field in model.model_fields.items()}
