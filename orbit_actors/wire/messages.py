"""Messages of the worker protocol (worker-protocol.md) as pydantic models.

``WorkerMessage`` is the discriminated union of what a worker may send;
:func:`decode_worker_message` turns a frame into one of them or raises :class:`WireError` with
the protocol's code (``UNKNOWN_MESSAGE``, ``INVALID_MESSAGE`` naming the field). Server messages
are encoded with :func:`encode`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import to_json

from ..ir.jsontext import MAX_DEPTH, TooDeepError, check_depth

if TYPE_CHECKING:
    from .server_fields import TaskFields


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    id: str | int | None = None


class Contract(BaseModel):
    """A task a worker serves: ``task_name@contract_version``."""

    model_config = ConfigDict(frozen=True)
    task_name: str
    contract_version: str


class Register(_Message):
    """A worker opens (or resumes) a session."""

    type: Literal["register"]
    worker_id: str = ""
    runtime: str = "unknown"
    sdk: str = "unknown"
    concurrency: int = Field(default=1, ge=0)
    contracts: list[Contract] = Field(default_factory=list)
    resume_session_id: str | None = None


class Complete(_Message):
    """A task's output."""

    type: Literal["complete"]
    token: str
    output: Any = None


class FailError(BaseModel):
    """A task's failure; ``retryable`` defaults to true."""

    code: str
    message: str = ""
    retryable: bool = True
    details: dict[str, Any] | None = None


class Fail(_Message):
    """A task failed."""

    type: Literal["fail"]
    token: str
    error: FailError


class Heartbeat(_Message):
    """A sign of life."""

    type: Literal["heartbeat"]


class Credit(_Message):
    """A new concurrency for the session."""

    type: Literal["credit"]
    concurrency: int = Field(ge=0, le=10_000)


class Unregister(_Message):
    """The worker leaves; its tasks are redelivered at once."""

    type: Literal["unregister"]


WorkerMessage = Annotated[
    Register | Complete | Fail | Heartbeat | Credit | Unregister, Field(discriminator="type")
]
KNOWN_TYPES = frozenset({"register", "complete", "fail", "heartbeat", "credit", "unregister"})
_DECODER: TypeAdapter[WorkerMessage] = TypeAdapter(WorkerMessage)


class WireError(ValueError):
    """A frame the server cannot take: ``code`` is the protocol's, ``ref`` the message id."""

    def __init__(self, code: str, message: str, ref: str | int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.ref = ref


def decode_worker_message(frame: str | bytes | dict[str, Any]) -> WorkerMessage:
    """One worker message from a text frame (or its parsed dict); ``INVALID_REQUEST`` for JSON
    nested deeper than :data:`~..ir.jsontext.MAX_DEPTH`."""
    if type(frame) is str and frame.count("[") + frame.count("{") <= MAX_DEPTH:
        try:  # the common case: too few brackets to nest too deep, valid in one pass
            message: WorkerMessage = _VALIDATE_JSON(frame)
            return message
        except ValidationError:
            pass  # explained by the path below
    return _decode_explained(frame)


_VALIDATE_JSON = _DECODER.validator.validate_json
"""The union's own validator (``TypeAdapter.validate_json`` adds ~2,600 instructions a call)."""


def _decode_explained(frame: str | bytes | dict[str, Any]) -> WorkerMessage:
    """:func:`decode_worker_message` in full: the depth checked, then the message validated,
    and a frame that is not one explained by the protocol's error code and the field at fault."""
    if not isinstance(frame, dict):
        try:
            check_depth(frame if isinstance(frame, str) else frame.decode("utf-8", "replace"))
        except TooDeepError as exc:
            raise WireError("INVALID_REQUEST", str(exc)) from None
    if not isinstance(frame, dict):
        try:  # the common case in one pass; anything amiss is explained by the path below
            return _DECODER.validate_json(frame)
        except ValidationError:
            pass
    data: Any = frame
    if not isinstance(frame, dict):
        try:
            data = json.loads(frame)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise WireError("INVALID_MESSAGE", f"the frame is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise WireError("INVALID_MESSAGE", "a message must be a JSON object")
    ref = data.get("id") if isinstance(data.get("id"), str | int) else None
    kind = data.get("type")
    if kind not in KNOWN_TYPES:
        raise WireError("UNKNOWN_MESSAGE", f"unknown message type {kind!r}", ref)
    try:
        return _DECODER.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"][1:]) or "message"
        raise WireError("INVALID_MESSAGE", f"{field}: {first['msg']}", ref) from None


class _ServerMessage(BaseModel):
    model_config = ConfigDict(frozen=True)


class Registered(_ServerMessage):
    """A session was opened (or resumed)."""

    type: Literal["registered"] = "registered"
    accepted: bool = True
    worker_session_id: str
    heartbeat_interval_ms: int
    session_timeout_ms: int
    resumed: bool = False
    warnings: list[str] = Field(default_factory=list)
    ref: str | int | None = None


class Task(_ServerMessage):
    """A task pushed to a worker."""

    type: Literal["task"] = "task"
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
    deadline_ms: int | None = None
    timeout_ms: int | None = None
    resent: bool = False
    """The same token sent again to the same session (after a resume): a worker already running
    it, or holding its result, must not start it again (an extension of the spec)."""

    def again(self) -> Task:
        """This task as it is sent again to the session that holds it."""
        return self.model_copy(update={"resent": True})

    def as_fields(self) -> TaskFields:
        """Every field of this task, by name (as the server's pool holds a task)."""
        return cast("TaskFields", self.model_dump())


class Ack(_ServerMessage):
    """The answer to a result."""

    type: Literal["ack"] = "ack"
    token: str
    accepted: bool
    reason: str | None = None
    ref: str | int | None = None


class HeartbeatAck(_ServerMessage):
    """The answer to a heartbeat: tokens cancelled and not yet reported."""

    type: Literal["heartbeat_ack"] = "heartbeat_ack"
    cancel: list[str] = Field(default_factory=list)
    ref: str | int | None = None


class Cancel(_ServerMessage):
    """Tokens the worker should stop working on."""

    type: Literal["cancel"] = "cancel"
    tokens: list[str]
    reason: str


class CreditAck(_ServerMessage):
    """The answer to a credit message."""

    type: Literal["credit_ack"] = "credit_ack"
    concurrency: int
    ref: str | int | None = None


class Unregistered(_ServerMessage):
    """The answer to unregister."""

    type: Literal["unregistered"] = "unregistered"
    ref: str | int | None = None


class ErrorMessage(_ServerMessage):
    """A refusal; the connection stays open."""

    type: Literal["error"] = "error"
    code: str
    message: str
    ref: str | int | None = None


ServerMessage = (
    Registered | Task | Ack | HeartbeatAck | Cancel | CreditAck | Unregistered | ErrorMessage
)
_OPTIONAL = frozenset({"ref", "deadline_ms", "timeout_ms", "reason"})
_ONLY_WHEN_TRUE = frozenset({"resent"})  # a task sent for the first time looks as the spec shows


def encode(message: ServerMessage) -> dict[str, Any]:
    """The JSON object of a server message (absent optional fields left out)."""
    data = message.model_dump(mode="json")
    return {
        k: v
        for k, v in data.items()
        if not (k in _OPTIONAL and v is None) and not (k in _ONLY_WHEN_TRUE and v is False)
    }


def encode_text(message: ServerMessage) -> str:
    """:func:`encode` as compact JSON text (:func:`encode_utf8`'s bytes decoded)."""
    return encode_utf8(message).decode()


def encode_utf8(message: ServerMessage) -> bytes:
    """:func:`encode` as compact JSON in UTF-8, as a text frame carries it: the message's
    fields, absent ones left out, written by pydantic-core's serializer in one call. Every field
    of a server message is a plain JSON value (``input`` and ``warnings`` included), so the
    serializer's inference writes the bytes the model's own schema does
    (``tests/server/test_wire_encoding.py`` compares them) for a third of the cost: no
    ``exclude`` set, no model schema walked."""
    data = message.__dict__
    fresh = True
    for name, absent in _LEFT_OUT[type(message)]:
        if data[name] is absent:
            if fresh:
                data, fresh = data.copy(), False
            del data[name]
    return _to_json(data, inf_nan_mode="null")


def encode_task(task: TaskFields) -> bytes:
    """``encode_utf8`` of the ``Task`` these fields make, without the model (one per
    dispatch: the server holds a task as its fields, see ``actors/pool.py``). The same serializer
    over the same fields in the same order, those left out by ``encode_utf8`` left out."""
    data = dict(task)
    for name, absent in _LEFT_OUT[Task]:
        if data[name] is absent:
            del data[name]
    return _to_json(data, inf_nan_mode="null")


def encode_ack(token: str, accepted: bool, reason: str | None, ref: str | int | None) -> bytes:
    """``encode_utf8(Ack(token=token, accepted=accepted, reason=reason, ref=ref))`` without
    the model (one per result: building it and reading it back cost three times the
    serializer's own call). The same serializer over the same fields in the same order."""
    fields: dict[str, Any] = {"type": "ack", "token": token, "accepted": accepted}
    if reason is not None:
        fields["reason"] = reason
    if ref is not None:
        fields["ref"] = ref
    return _to_json(fields, inf_nan_mode="null")


_to_json = to_json
_LEFT_OUT: dict[type[BaseModel], tuple[tuple[str, object], ...]] = {
    kind: tuple((k, None) for k in _OPTIONAL if k in kind.model_fields)
    + ((("resent", False),) if "resent" in kind.model_fields else ())
    for kind in (Registered, Task, Ack, HeartbeatAck, Cancel, CreditAck, Unregistered, ErrorMessage)
}
"""Per server message type: its fields left out when they hold the given value (the optional
ones when None, ``resent`` when false). NaN and infinities are written ``null``, as the models'
(default) ``ser_json_inf_nan`` has them."""
