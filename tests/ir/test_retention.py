"""A definition's ``retention``: at least a minute, a duration; refused with its path
otherwise (400 INVALID_IR through the API)."""

from __future__ import annotations

import pytest

from orbit_actors.errors import DefinitionError
from orbit_actors.ir import compile_source

SOURCE = """
workflow: kept
version: 1.0.0
retention: {retention}
steps: [{{id: v, value: 1}}]
"""


def test_a_retention_is_kept_in_milliseconds() -> None:
    assert compile_source(SOURCE.format(retention="30d")).ir.retention == 30 * 86_400_000


@pytest.mark.parametrize(
    ("written", "reason"),
    [("59s", "59s is shorter than the minimum retention of 1m"), ("soon", "is not a duration")],
)
def test_a_short_or_malformed_retention_is_refused_with_its_path(written: str, reason: str) -> None:
    with pytest.raises(DefinitionError) as refused:
        compile_source(SOURCE.format(retention=written))
    [problem] = refused.value.problems
    assert problem.path == "retention" and reason in problem.reason
