"""Definitions: the workflow language's models, loading, schema subset, CEL and hashing (pure)."""

from __future__ import annotations

from typing import Any

from .compile import ChildResolver, canonical_json, compile_definition, definition_hash
from .durations import format_duration, parse_duration
from .loader import Locator, load_definition, load_document, parse_definition
from .models import DEFAULT_RETRY, Definition, RetryPolicy, Step
from .plan import CompensationPlan, CompiledDefinition, StepPlan
from .schema import Schema, SchemaViolation, validate
from .semver import latest, parse_semver

__all__ = [
    "DEFAULT_RETRY",
    "ChildResolver",
    "CompensationPlan",
    "CompiledDefinition",
    "Definition",
    "Locator",
    "RetryPolicy",
    "Schema",
    "SchemaViolation",
    "Step",
    "StepPlan",
    "canonical_json",
    "compile_definition",
    "compile_ir",
    "compile_source",
    "definition_hash",
    "format_duration",
    "latest",
    "load_definition",
    "load_document",
    "parse_definition",
    "parse_duration",
    "parse_semver",
    "validate",
]


def compile_source(
    text: str,
    file: str | None = None,
    *,
    resolve_child: ChildResolver | None = None,
    require_children: bool = False,
) -> CompiledDefinition:
    """Load YAML or JSON text and compile it; raises ``DefinitionError`` naming file, line,
    column and path of every problem."""
    definition, locator = load_definition(text, file)
    return compile_definition(
        definition, resolve_child=resolve_child, require_children=require_children, locator=locator
    )


def compile_ir(
    data: Any, *, resolve_child: ChildResolver | None = None, require_children: bool = False
) -> CompiledDefinition:
    """Validate and compile an IR (or source) given as plain data, recomputing its hash."""
    return compile_definition(
        parse_definition(data), resolve_child=resolve_child, require_children=require_children
    )
