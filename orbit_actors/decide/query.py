"""Queries: a declared expression evaluated against the run's current (or final) state. A query
never writes history; steps not yet succeeded read ``output: null``."""

from __future__ import annotations

from typing import Any

from ..errors import QueryFailedError, UnknownQueryError
from ..history.state import ExecutionState
from ..ir.expressions import EvaluationError, Scope
from ..ir.plan import CompiledDefinition


def evaluate_query(state: ExecutionState, definition: CompiledDefinition, name: str) -> Any:
    """The value of query ``name``; raises UnknownQueryError or QueryFailedError."""
    expression = definition.queries.get(name)
    if expression is None:
        declared = ", ".join(sorted(definition.queries)) or "none"
        raise UnknownQueryError(
            f"{definition.name}@{definition.version} has no query `{name}`; declared: {declared}"
        )
    values = {"input": state.input, "execution": state.execution_view()}
    scope = Scope(values, state, definition.plans)
    try:
        return expression.evaluate(scope)
    except EvaluationError as exc:
        raise QueryFailedError(f"query `{name}` failed: {exc}") from None
