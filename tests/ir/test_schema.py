"""The schema subset: defaults, strict and lenient validation, path-named errors."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from orbit_actors.ir import Schema, SchemaViolation, validate

ORDER = Schema.model_validate(
    {
        "type": "object",
        "required": ["items"],
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"sku": {"type": "string"}}},
            },
            "amount": {"type": "number"},
            "count": {"type": "integer"},
            "express": {"type": "boolean", "default": False},
        },
    }
)


def test_the_error_names_the_path_and_the_types() -> None:
    with pytest.raises(SchemaViolation) as caught:
        validate(ORDER, {"items": [{"sku": "a"}, {"sku": "b"}, {"sku": 7}]}, strict=True)
    assert str(caught.value) == "$.items[2].sku: expected string, got integer"


def test_defaults_are_filled_in_before_validation() -> None:
    assert validate(ORDER, {"items": []}, strict=True) == {"items": [], "express": False}


def test_a_number_reaches_expressions_as_a_double_and_an_integer_stays_an_int() -> None:
    value = validate(ORDER, {"items": [], "amount": 10, "count": 3.0}, strict=True)
    assert isinstance(value["amount"], float) and value["amount"] == 10.0
    assert isinstance(value["count"], int) and value["count"] == 3


def test_strict_refuses_undeclared_properties() -> None:
    with pytest.raises(SchemaViolation, match=r"\$\.colour: is not a declared property"):
        validate(ORDER, {"items": [], "colour": "red"}, strict=True)


def test_lenient_accepts_undeclared_properties() -> None:
    assert validate(ORDER, {"items": [], "colour": "red"}, strict=False)["colour"] == "red"


def test_additional_properties_true_opens_a_strict_object() -> None:
    schema = Schema.model_validate(
        {"type": "object", "properties": {}, "additionalProperties": True}
    )
    assert validate(schema, {"x": 1}, strict=True) == {"x": 1}


def test_additional_properties_false_closes_a_lenient_object() -> None:
    schema = Schema.model_validate({"type": "object", "additionalProperties": False})
    with pytest.raises(SchemaViolation):
        validate(schema, {"x": 1}, strict=False)


def test_a_missing_required_property_is_named() -> None:
    with pytest.raises(SchemaViolation, match=r"^\$\.items: is required$"):
        validate(ORDER, {}, strict=True)


@pytest.mark.parametrize(
    ("schema", "value", "reason"),
    [
        ({"enum": ["a", "b"]}, "c", 'is not one of "a", "b"'),
        ({"const": 3}, 4, "must be 3"),
        ({"minimum": 1}, 0, "at least 1"),
        ({"maximum": 1}, 2, "at most 1"),
        ({"minLength": 2}, "a", "at least 2 characters"),
        ({"maxLength": 1}, "ab", "at most 1 characters"),
        ({"pattern": "^[0-9]+$"}, "12a", "does not match the pattern"),
        ({"minItems": 1}, [], "at least 1 items"),
        ({"maxItems": 0}, [1], "at most 0 items"),
        ({"type": ["string", "null"]}, 1, "expected string or null, got integer"),
        ({"type": "integer"}, 1.5, "expected integer, got number"),
        ({"type": "integer"}, True, "expected integer, got boolean"),
    ],
)
def test_each_keyword_is_checked(schema: dict[str, object], value: object, reason: str) -> None:
    with pytest.raises(SchemaViolation) as caught:
        validate(Schema.model_validate(schema), value, strict=True)
    assert reason in caught.value.reason


def test_booleans_are_not_numbers_in_enums() -> None:
    with pytest.raises(SchemaViolation):
        validate(Schema.model_validate({"enum": [1]}), True, strict=True)


def test_a_keyword_outside_the_subset_is_refused() -> None:
    with pytest.raises(ValidationError, match="format"):
        Schema.model_validate({"type": "string", "format": "email"})


def test_a_pattern_that_does_not_compile_is_refused() -> None:
    with pytest.raises(ValidationError, match="pattern does not compile"):
        Schema.model_validate({"pattern": "("})
