"""Server messages as a worker reads them: each frame validated against the same field schemas
as the models of :mod:`.messages` (types, constraints, defaults, the tagged union on ``type``),
into a plain dict of every field instead of a model instance.

Why: a worker reads two server messages per task (the task, then the ack of its result), and
building a frozen model instance (its ``__dict__``, the set of fields given, its extra and
private slots) was a quarter of their validation. The checks are the models' own, taken from
their core schemas, so there is no second copy of the protocol to keep in step: a message the
models would refuse is refused here with the same error (a :class:`~pydantic.ValidationError`
with the same location and message), and a field left out gets the model's default.
"""

from __future__ import annotations

from typing import Any

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

ServerFields = dict[str, Any]
"""A server message as :func:`decode_server_fields` gives it: every field of its model, by name
(``type`` says which)."""

_KINDS: tuple[type[BaseModel], ...] = (
    Registered, Task, Ack, HeartbeatAck, Cancel, CreditAck, Unregistered, ErrorMessage,
)  # fmt: skip


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
