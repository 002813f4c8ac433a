""" "Did you mean …?": the closest known name to a misspelt one, for every message that says a
name is unknown (fields, step ids, tasks, signals, child workflows, schema properties)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from functools import cache

from pydantic import BaseModel

CUTOFF = 0.6  # difflib's ratio: "retyr"/"retry" is 0.8, "nmae"/"name" 0.75, "nope"/"echo" 0.25


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``name``, when one is close enough."""
    found = difflib.get_close_matches(name, sorted(set(known)), n=1, cutoff=CUTOFF)
    return found[0] if found else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean `x`?"`` for the closest known name, or ``""``."""
    found = closest(name, known)
    return f"; did you mean `{found}`?" if found else ""


def field_names(path: tuple[str | int, ...]) -> frozenset[str]:
    """The fields that may be written where the unknown field at ``path`` was found."""
    return _fields(_model_at(tuple(p for p in path[:-1] if isinstance(p, str))))


def _model_at(keys: tuple[str, ...]) -> str:
    """Which model holds the fields under ``keys`` (the string keys of the path)."""
    if not keys:
        return "Definition"
    if keys[0] in ("input", "signals") or "properties" in keys or "items" in keys:
        return "Schema"
    if keys[0] == "tasks":
        return "Schema" if "output" in keys else "TaskContract"
    last = keys[-1]
    named = {"retry": "RetryPolicy", "compensate": "Compensation", "http": "HttpSpec"}
    if last in named:
        return named[last]
    if keys[0] == "workflows":
        return "ChildContract"
    return "Step"


@cache
def _fields(model_name: str) -> frozenset[str]:
    from . import models, schema

    model: type[BaseModel] = getattr(models, model_name, None) or getattr(schema, model_name)
    return frozenset(info.alias or name for name, info in model.model_fields.items())
