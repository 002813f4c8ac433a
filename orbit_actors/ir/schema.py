"""The schema subset of the workflow language and its validation.

Written by hand rather than with a JSON Schema library because one pass must do three things the
libraries do not do together: fill in ``default`` values, turn numbers validated as ``number`` into
doubles (CEL does no int/double arithmetic), and word errors exactly as the spec quotes them
(``$.items[2].sku: expected string, got integer``). The subset is small enough to read at a glance.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

JsonType = Literal["object", "array", "string", "number", "integer", "boolean", "null"]


class Schema(BaseModel):
    """One node of the schema subset; anything outside it is refused with its path."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    type: JsonType | list[JsonType] | None = None
    properties: dict[str, Schema] | None = None
    required: list[str] | None = None
    additional_properties: bool | None = Field(default=None, alias="additionalProperties")
    items: Schema | None = None
    enum: list[Any] | None = None
    const: Any = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = Field(default=None, alias="minLength", ge=0)
    max_length: int | None = Field(default=None, alias="maxLength", ge=0)
    pattern: str | None = None
    min_items: int | None = Field(default=None, alias="minItems", ge=0)
    max_items: int | None = Field(default=None, alias="maxItems", ge=0)
    default: Any = None
    description: str | None = None

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"pattern does not compile: {exc}") from None
        return value

    @property
    def types(self) -> tuple[str, ...]:
        """The allowed JSON types; empty means any."""
        if self.type is None:
            return ()
        return (self.type,) if isinstance(self.type, str) else tuple(self.type)

    def has_field(self, name: str) -> bool:
        """True when the keyword was written (``const: null`` and ``default: null`` count)."""
        return name in self.model_fields_set


class SchemaViolation(ValueError):
    """A value does not match a schema; ``path`` is JSON-path-like (``$.items[2].sku``)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def json_type_of(value: object) -> str:
    """The JSON type name of a Python value, as used in messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def validate(schema: Schema | None, value: Any, *, strict: bool, path: str = "$") -> Any:
    """Return ``value`` with defaults filled in and ``number`` values as doubles, or raise
    :class:`SchemaViolation`. Strict validation refuses undeclared object properties unless the
    schema says ``additionalProperties: true``; lenient validation accepts them."""
    if schema is None:
        return value
    value = _check_type(schema, value, path)
    _check_constants(schema, value, path)
    if isinstance(value, dict):
        return _check_object(schema, value, strict, path)
    if isinstance(value, list):
        return _check_array(schema, value, strict, path)
    if isinstance(value, str):
        _check_string(schema, value, path)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(schema, value, path)
    return value


def _check_type(schema: Schema, value: Any, path: str) -> Any:
    types = schema.types
    if not types:
        return value
    actual = json_type_of(value)
    if actual in types:
        if actual == "integer" and "integer" not in types and "number" in types:
            return float(value)
        return value
    if actual == "integer" and "number" in types:
        return float(value)
    if actual == "number" and "integer" in types and float(value).is_integer():
        return int(value)
    expected = " or ".join(types)
    raise SchemaViolation(path, f"expected {expected}, got {actual}")


def _check_constants(schema: Schema, value: Any, path: str) -> None:
    if schema.enum is not None and not any(_same(value, option) for option in schema.enum):
        allowed = ", ".join(_show(option) for option in schema.enum)
        raise SchemaViolation(path, f"{_show(value)} is not one of {allowed}")
    if schema.has_field("const") and not _same(value, schema.const):
        raise SchemaViolation(path, f"must be {_show(schema.const)}")


def _check_object(schema: Schema, value: dict[str, Any], strict: bool, path: str) -> dict[str, Any]:
    properties = schema.properties or {}
    result = dict(value)
    for name, sub in properties.items():
        if name not in result and sub.has_field("default"):
            result[name] = sub.default
    for name in schema.required or ():
        if name not in result:
            raise SchemaViolation(_join(path, name), "is required")
    closed = schema.additional_properties is False or (
        strict and schema.additional_properties is None and schema.properties is not None
    )
    for name, item in result.items():
        sub_schema = properties.get(name)
        if sub_schema is not None:
            result[name] = validate(sub_schema, item, strict=strict, path=_join(path, name))
        elif closed:
            raise SchemaViolation(_join(path, name), "is not a declared property")
    return result


def _check_array(schema: Schema, value: list[Any], strict: bool, path: str) -> list[Any]:
    if schema.min_items is not None and len(value) < schema.min_items:
        raise SchemaViolation(path, f"must have at least {schema.min_items} items")
    if schema.max_items is not None and len(value) > schema.max_items:
        raise SchemaViolation(path, f"must have at most {schema.max_items} items")
    if schema.items is None:
        return value
    return [
        validate(schema.items, item, strict=strict, path=f"{path}[{index}]")
        for index, item in enumerate(value)
    ]


def _check_string(schema: Schema, value: str, path: str) -> None:
    if schema.min_length is not None and len(value) < schema.min_length:
        raise SchemaViolation(path, f"must be at least {schema.min_length} characters long")
    if schema.max_length is not None and len(value) > schema.max_length:
        raise SchemaViolation(path, f"must be at most {schema.max_length} characters long")
    if schema.pattern is not None and _regex(schema.pattern).search(value) is None:
        raise SchemaViolation(path, f"does not match the pattern {schema.pattern!r}")


def _check_number(schema: Schema, value: float, path: str) -> None:
    if schema.minimum is not None and value < schema.minimum:
        raise SchemaViolation(path, f"must be at least {_show(schema.minimum)}")
    if schema.maximum is not None and value > schema.maximum:
        raise SchemaViolation(path, f"must be at most {_show(schema.maximum)}")


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _join(path: str, key: str) -> str:
    if _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}"
    return f"{path}[{key!r}]"


def _same(left: Any, right: Any) -> bool:
    """JSON equality: booleans are not numbers, and 1 equals 1.0."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    return bool(left == right)


def _show(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True)
