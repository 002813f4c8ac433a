"""A started execution's answer (``POST /v1/executions?wait=S``) sends its result's status,
output and error as the result model's own JSON dump of those three fields writes them:
:func:`~orbit_actors.server.api.outcome_body` reads the fields without the dump's machinery, so
it is checked against the dump for many generated results."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from orbit_actors.server.api import outcome_body
from orbit_actors.views import ExecutionResult
from orbit_actors.views.models import ResultError

TEXT = st.text(st.characters(codec="utf-8"))
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)  # fmt: skip
ERRORS = st.none() | st.builds(
    ResultError, code=TEXT, message=TEXT, details=st.none() | st.dictionaries(TEXT, VALUES)
)


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN (none should be left: both write it as null)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None)
@given(
    status=st.sampled_from(["completed", "failed", "cancelled", "timed_out", "terminated"]),
    output=VALUES, error=ERRORS,
)  # fmt: skip
def test_the_start_answer_sends_the_result_as_its_json_dump_of_three_fields(
    status: str, output: Any, error: ResultError | None
) -> None:
    result = ExecutionResult(
        execution_id="x1", workflow="w", version="1.0.0", status=status, run=1,
        started_at_ms=1, closed_at_ms=2, parent_id=None, schedule_id=None, output=output,
        error=error,
    )  # fmt: skip
    dumped = result.model_dump(mode="json", include={"status", "output", "error"})
    assert _same(outcome_body(result), dumped)
