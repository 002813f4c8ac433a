"""Server messages as a worker reads them: each frame validated against the same field schemas
as the models of :mod:`.messages` (types, constraints, defaults, the tagged union on ``type``),
into a typed dict of every field (one ``TypedDict`` per message, held to its model's fields and
types by tests/worker/test_server_fields.py) instead of a model instance: still one closed,
typed vocabulary past the edge, checked by mypy in the worker's handlers.

Why: a worker reads two server messages per task (the task, then the ack of its result), and
building a frozen model instance (its ``__dict__``, the set of fields given, its extra and
private slots) was a quarter of their validation. The checks are the models' own, taken from
their core schemas (the typed dicts only name the fields for mypy): a message the models would
refuse is refused here with the same error (a :class:`~pydantic.ValidationError`
with the same location and message), and a field left out gets the model's default.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from pydantic import BaseModel
from pydantic_core import SchemaValidator, core_schema

from .messages import (
    Ack,
    Cancel,
    CreditAck,
    ErrorMessage,
    HeartbeatAck,
    Registered,
    Task,
    Unregistered,
)


class RegisteredFields(TypedDict):
    """The fields of a :class:`~.messages.Registered`."""

    type: Literal["registered"]
    accepted: bool
    worker_session_id: str
    heartbeat_interval_ms: int
    session_timeout_ms: int
    resumed: bool
    warnings: list[str]
    ref: str | int | None


class TaskFields(TypedDict):
    """The fields of a :class:`~.messages.Task`."""

    type: Literal["task"]
    token: str
    execution_id: str
    workflow: str
    workflow_version: str
    step_id: str
    task_name: str
    contract_version: str
    input: Any
    idempotency_key: str
    attempt: int
    redelivery: bool
    deadline_ms: int | None
    timeout_ms: int | None
    resent: bool


class AckFields(TypedDict):
    """The fields of an :class:`~.messages.Ack`."""

    type: Literal["ack"]
    token: str
    accepted: bool
    reason: str | None
    ref: str | int | None


class HeartbeatAckFields(TypedDict):
    """The fields of a :class:`~.messages.HeartbeatAck`."""

    type: Literal["heartbeat_ack"]
    cancel: list[str]
    ref: str | int | None


class CancelFields(TypedDict):
    """The fields of a :class:`~.messages.Cancel`."""

    type: Literal["cancel"]
    tokens: list[str]
    reason: str


class CreditAckFields(TypedDict):
    """The fields of a :class:`~.messages.CreditAck`."""

    type: Literal["credit_ack"]
    concurrency: int
    ref: str | int | None


class UnregisteredFields(TypedDict):
    """The fields of an :class:`~.messages.Unregistered`."""

    type: Literal["unregistered"]
    ref: str | int | None


class ErrorFields(TypedDict):
    """The fields of an :class:`~.messages.ErrorMessage`."""

    type: Literal["error"]
    code: str
    message: str
    ref: str | int | None


ServerFields = (
    RegisteredFields | TaskFields | AckFields | HeartbeatAckFields | CancelFields
    | CreditAckFields | UnregisteredFields | ErrorFields
)  # fmt: skip
"""A server message as :func:`decode_server_fields` gives it: every field of its model, by name,
typed (``type`` says which; tests/worker/test_server_fields.py holds each to its model)."""
FIELDS_OF: dict[type[BaseModel], type] = {
    Registered: RegisteredFields, Task: TaskFields, Ack: AckFields,
    HeartbeatAck: HeartbeatAckFields, Cancel: CancelFields, CreditAck: CreditAckFields,
    Unregistered: UnregisteredFields, ErrorMessage: ErrorFields,
}  # fmt: skip
"""Each server message's model and the typed dict of its fields."""

_KINDS: tuple[type[BaseModel], ...] = tuple(FIELDS_OF)


def _fields_schema(model: type[BaseModel]) -> core_schema.TypedDictSchema:
    """``model``'s fields, each with its own schema (a default included), as a typed dict."""
    schema: Any = model.__pydantic_core_schema__
    if schema["type"] != "model" or schema["schema"]["type"] != "model-fields":
        raise TypeError(f"{model.__name__}: a flat model was expected")
    fields = schema["schema"]["fields"]
    return core_schema.typed_dict_schema(
        {
            name: core_schema.typed_dict_field(
                field["schema"], required=field["schema"]["type"] != "default"
            )
            for name, field in fields.items()
        }
    )


def _tag(model: type[BaseModel]) -> str:
    default: str = model.model_fields["type"].default
    return default


_DECODER = SchemaValidator(
    core_schema.tagged_union_schema(
        {_tag(kind): _fields_schema(kind) for kind in _KINDS}, discriminator="type"
    )
)


def decode_server_fields(frame: str | bytes) -> ServerFields:
    """One server message from a text frame, as a dict of all its model's fields (defaults
    filled in); :class:`~pydantic.ValidationError` for anything the model would refuse."""
    fields: ServerFields = _DECODER.validate_json(frame)
    return fields
