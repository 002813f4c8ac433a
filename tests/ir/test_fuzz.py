"""No definition, however malformed, raises anything but a DefinitionError."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from orbit_actors.errors import DefinitionError
from orbit_actors.ir import compile_ir, compile_source

WORDS = ["workflow", "version", "steps", "id", "task", "tasks", "input", "output", "for", "as",
         "await", "sleep", "until", "value", "when", "after", "retry", "timeout", "signals",
         "queries", "workflows", "compensate", "http", "url", "type", "properties", "default",
         "on_failure", "limits", "max_fan_out", "continue_as_new", "concurrency", "items", "t"]  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False),
    st.sampled_from(WORDS),
    st.sampled_from(
        ["1.0.0", "${input.x}", "${steps.a.output}", "${", "1s", "x y", "${1/0}", "a.b"]
    ),
    st.text(max_size=8),
)
JSON: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(WORDS), inner, max_size=5)
    ),
    max_leaves=30,
)


def _base(extra: dict[str, Any]) -> dict[str, Any]:
    return {"workflow": "x", "version": "1.0.0", "tasks": {"t": {"version": "1"}}, **extra}


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(WORDS), JSON, max_size=6))
def test_random_structures_give_definition_errors_or_compile(data: dict[str, Any]) -> None:
    for candidate in (data, _base(data)):
        with contextlib.suppress(DefinitionError):
            compile_ir(candidate)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(WORDS), JSON, max_size=6), min_size=1, max_size=4))
def test_random_steps_give_definition_errors_or_compile(steps: list[dict[str, Any]]) -> None:
    with contextlib.suppress(DefinitionError):
        compile_source(json.dumps(_base({"steps": steps})))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_random_text_gives_definition_errors_or_compiles(text: str) -> None:
    with contextlib.suppress(DefinitionError):
        compile_source(text)


STEP_FIELDS = st.dictionaries(
    st.sampled_from(
        [
            "after",
            "when",
            "input",
            "for",
            "as",
            "concurrency",
            "timeout",
            "retry",
            "on_error",
            "compensate",
        ]
    ),
    JSON,
    max_size=3,
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["task", "value", "sleep", "await", "http"]), STEP_FIELDS),
        min_size=1,
        max_size=4,
    )
)
def test_nearly_valid_steps_give_definition_errors_or_compile(
    shapes: list[tuple[str, dict[str, Any]]],
) -> None:
    kinds = {
        "task": "t",
        "value": "${input}",
        "sleep": "1s",
        "await": "go",
        "http": {"url": "${input.u}"},
    }
    steps = [{"id": f"s{i}", kind: kinds[kind], **extra} for i, (kind, extra) in enumerate(shapes)]
    with contextlib.suppress(DefinitionError):
        compile_ir(_base({"steps": steps, "signals": {"go": None}}))
