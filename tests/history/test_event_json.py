"""The events' own JSON writer (``_json_fields`` and ``to_json``) writes, for every event type,
exactly the bytes the pydantic adapter over the event union writes, which stays the reference:
optional fields left out when absent, payloads keeping an explicit null, NaN and infinities as
null, nested models with their own absent fields left out, and payload values that are not JSON
converted, or refused, the same way."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import types
import typing
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter
from pydantic_core import PydanticSerializationError

from orbit_actors.history import events as ev
from orbit_actors.history.events import Event, event_to_json, events_to_json

_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
_LIST_ADAPTER: TypeAdapter[list[Event]] = TypeAdapter(list[Event])
EVENT_TYPES: tuple[type[Any], ...] = typing.get_args(typing.get_args(Event)[0])

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and infinities included
    | st.text()
)
_not_json = (  # what a payload may hold that JSON has no type for
    st.tuples(st.integers(), st.text())
    | st.frozensets(st.integers(), max_size=3)
    | st.binary(max_size=8)  # bytes that are not UTF-8 are refused
    | st.datetimes()
    | st.uuids()
    | st.decimals(allow_nan=False)
    | st.dictionaries(st.integers(), st.integers(), max_size=2)  # keys that are not strings
)
_payloads = st.recursive(
    _scalars | _not_json,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


def _strategy(hint: Any) -> st.SearchStrategy[Any]:
    """Values of a field's type (a payload where the type is ``Any``)."""
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return _strategy(typing.get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):
        return st.one_of([_strategy(arm) for arm in typing.get_args(hint)])
    if origin is typing.Literal:
        return st.sampled_from(typing.get_args(hint))
    if origin is list:
        return st.lists(_strategy(typing.get_args(hint)[0]), max_size=3)
    if origin is dict:
        key, value = typing.get_args(hint)
        return st.dictionaries(_strategy(key), _strategy(value), max_size=3)
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        return st.builds(hint, **_fields(hint, typing.get_type_hints(hint, include_extras=True)))
    simple: dict[Any, st.SearchStrategy[Any]] = {
        Any: _payloads,
        int: st.integers(),
        str: st.text(),
        bool: st.booleans(),
        type(None): st.none(),
    }
    return simple[hint]


def _fields(cls: type[Any], hints: dict[str, Any]) -> dict[str, st.SearchStrategy[Any]]:
    names = (
        [f.name for f in dataclasses.fields(cls)]
        if dataclasses.is_dataclass(cls)
        else list(cls.model_fields)
    )
    return {name: _strategy(hints[name]) for name in names if name != "type"}


def _events(cls: type[Any]) -> st.SearchStrategy[Any]:
    return st.builds(cls, **_fields(cls, typing.get_type_hints(cls, include_extras=True)))


_any_event = st.one_of([_events(cls) for cls in EVENT_TYPES])


def _both(write: Any, reference: Any, value: Any) -> None:
    """``write`` and ``reference`` give the same text, or both refuse the value."""
    try:
        expected = reference(value)
    except PydanticSerializationError:
        with pytest.raises(PydanticSerializationError):
            write(value)
        return
    assert write(value) == expected


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("cls", EVENT_TYPES, ids=lambda cls: cls.__name__)
@SETTINGS
@given(data=st.data())
def test_an_event_is_written_as_the_adapter_writes_it(cls: type[Any], data: st.DataObject) -> None:
    event = data.draw(_events(cls))
    _both(event_to_json, lambda e: _ADAPTER.dump_json(e).decode(), event)


@SETTINGS
@given(st.lists(_any_event, max_size=12))
def test_a_list_of_events_is_written_as_the_adapter_writes_it(events: list[Event]) -> None:
    _both(events_to_json, lambda e: _LIST_ADAPTER.dump_json(e).decode(), events)


def test_a_known_commit_is_written_byte_for_byte() -> None:
    created = ev.WorkflowCreated(
        seq=1, timestamp_ms=5, execution_id="e", workflow="w", version="1", definition_hash="h",
        input={"x": float("nan"), "at": datetime.date(2026, 1, 2), "n": decimal.Decimal("1.5")},
        limits=ev.EffectiveLimits(max_fan_out=1, max_history_events=2, max_payload_bytes=3),
        schedule_id="s", flow=ev.StartFlow(key="k"), parent=ev.ParentRef(execution_id="p", step="a"),
    )  # fmt: skip
    failed = ev.StepAttemptFailed(
        seq=2, timestamp_ms=6, step="a", attempt=1,
        error=ev.ErrorInfo(code="c", message="m", details={"id": uuid.UUID(int=1)}),
    )  # fmt: skip
    scheduled = ev.StepScheduled(
        seq=3, timestamp_ms=7, step="b", attempt=1, input=None, idempotency_key="k"
    )
    assert events_to_json([created, failed, scheduled]) == (
        '[{"seq":1,"timestamp_ms":5,"type":"WorkflowCreated","execution_id":"e","workflow":"w",'
        '"version":"1","definition_hash":"h","input":{"x":null,"at":"2026-01-02","n":"1.5"},'
        '"limits":{"max_fan_out":1,"max_history_events":2,"max_payload_bytes":3},'
        '"parent":{"execution_id":"p","step":"a"},"schedule_id":"s","run":1,'
        '"flow":{"priority":5,"key":"k"}},'
        '{"seq":2,"timestamp_ms":6,"type":"StepAttemptFailed","step":"a","attempt":1,'
        '"error":{"code":"c","message":"m","retryable":false,'
        '"details":{"id":"00000000-0000-0000-0000-000000000001"}}},'
        '{"seq":3,"timestamp_ms":7,"type":"StepScheduled","step":"b","attempt":1,"input":null,'
        '"idempotency_key":"k","redelivery":false}]'
    )
    assert (
        events_to_json([created, failed, scheduled])
        == _LIST_ADAPTER.dump_json([created, failed, scheduled]).decode()
    )
