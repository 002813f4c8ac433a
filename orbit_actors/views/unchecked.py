"""Models the server builds from its own values, made without validation.

The pydantic models of :mod:`orbit_actors.wire.messages` and :mod:`.models` stay the contract at
the edge: what this module makes is an instance of one, which the gateway or the API encodes to
the very bytes a validated one gives (``tests/runtime/test_unchecked.py`` compares them). Only
the check is left out, for models whose every field comes from Orbit's own typed state and that
are made once or more per execution: a validated ``Task`` (one per dispatch) cost ~25,000
instructions, made here ~15,000; the ``wait`` answer 29,000 against 14,000; an ``ack`` (one per
result) 13,000 against 9,300.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_set = object.__setattr__  # the models are frozen: set as pydantic's model_construct does


def unchecked(kind: type[M], fields: dict[str, Any], given: frozenset[str]) -> M:
    """``kind(**fields)`` without validation: ``fields`` holds every field of ``kind``,
    defaults included, each already of its type; ``given`` names those a caller of ``kind()``
    would pass (pydantic's ``model_fields_set``)."""
    message = _new(kind)
    _set(message, "__dict__", fields)
    _set(message, "__pydantic_fields_set__", set(given))
    _set(message, "__pydantic_extra__", None)
    _set(message, "__pydantic_private__", None)
    return message
