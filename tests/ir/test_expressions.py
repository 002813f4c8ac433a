"""CEL expressions and value templates."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbit_actors.ir.expressions import (
    EvaluationError,
    Scope,
    _Hole,
    compile_expression,
    compile_template,
)


def render(raw: Any, **values: Any) -> Any:
    return compile_template(raw).render(Scope(values))


class _Views:
    """Steps read from a function giving each step's view; a field is read from the view."""

    def __init__(self, view: Callable[[str], dict[str, Any]]) -> None:
        self.view = view

    def step_view(self, step_id: str) -> dict[str, Any]:
        return self.view(step_id)

    def step_field(self, step_id: str, name: str) -> Any:
        return self.view(step_id)[name]


def test_a_whole_string_template_is_replaced_by_the_typed_value() -> None:
    assert render({"n": "${input.n}", "list": ["${input.n + 1}"]}, input={"n": 2}) == {
        "n": 2,
        "list": [3],
    }


def test_spaces_inside_the_braces_are_allowed() -> None:
    assert render("${  input.s  }", input={"s": "x"}) == "x"


def test_there_is_no_interpolation() -> None:
    assert render("id-${input.s}", input={"s": "x"}) == "id-${input.s}"
    assert render("${'id-' + input.s}", input={"s": "x"}) == "id-x"


def test_cel_does_no_arithmetic_across_int_and_double() -> None:
    with pytest.raises(EvaluationError):
        render("${input.n * 1.2}", input={"n": 10})
    assert render("${input.n * 1.2}", input={"n": 10.0}) == pytest.approx(12.0)


def test_a_missing_field_is_an_evaluation_error_naming_the_template_path() -> None:
    with pytest.raises(EvaluationError, match=r"^a\.b: no such key: nope"):
        render({"a": {"b": "${input.nope}"}}, input={})


def test_a_non_json_result_is_an_evaluation_error() -> None:
    with pytest.raises(EvaluationError, match="not a JSON value"):
        render("${timestamp('2020-01-01T00:00:00Z')}")


def test_an_expression_names_the_steps_it_reads() -> None:
    expression = compile_expression('steps.a.output == null && steps["b"].status == "x"')
    assert expression.step_refs == {"a", "b"} and not expression.reads_all_steps


def test_steps_read_whole_is_noticed() -> None:
    assert compile_expression("size(steps) > 1").reads_all_steps


def test_a_string_literal_is_not_a_step_reference() -> None:
    assert compile_expression('"steps.zz" + input.a').step_refs == frozenset()


def test_bindings_convert_only_the_steps_an_expression_reads() -> None:
    seen: list[str] = []

    def view(step_id: str) -> dict[str, Any]:
        seen.append(step_id)
        return {"output": 1}

    expression = compile_expression("steps.a.output")
    assert expression.evaluate(Scope({}, _Views(view), ["a", "b", "c"])) == 1
    assert seen == ["a"]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3)
    ),
    max_leaves=10,
)


def _outcome(expression: Any, scope: Scope) -> tuple[str, Any]:
    try:
        return "value", expression.evaluate(scope)
    except EvaluationError as exc:
        return "error", str(exc)


@given(value=_json, path=st.lists(st.sampled_from("abc"), min_size=0, max_size=3))
def test_a_field_path_read_directly_equals_cel(value: Any, path: list[str]) -> None:
    source = ".".join(["input", *path])
    fast = compile_expression(source)
    assert fast.field_path is not None
    through_cel = dataclasses.replace(fast, field_path=None)
    scope = Scope({"input": value})
    fast_outcome, cel_outcome = _outcome(fast, scope), _outcome(through_cel, scope)
    if fast_outcome[0] == "value" and cel_outcome[0] == "value":
        same = json.dumps(fast_outcome[1], sort_keys=True) == json.dumps(
            cel_outcome[1], sort_keys=True
        )
        assert same  # compared as text: NaN-safe, int and float kept apart; CEL maps are unordered
    else:
        assert fast_outcome == cel_outcome


def test_a_step_field_path_reads_the_step_view() -> None:
    expression = compile_expression("steps.a.output.n")
    scope = Scope({}, _Views(lambda name: {"status": "completed", "output": {"n": [name]}}))
    assert expression.field_path == ("steps", "a", "output", "n")
    assert expression.evaluate(scope) == ["a"]


@pytest.mark.parametrize(
    "source", ["steps.a.output.n", "steps.a.status", "steps.a.output", "steps.a.nope", "steps.a"]
)
def test_a_step_read_through_step_field_equals_the_view(source: str) -> None:
    view = {"status": "succeeded", "output": {"n": [1]}, "error": None, "attempts": 1}
    expression = compile_expression(source)
    through_cel = dataclasses.replace(expression, field_path=None)  # reads the whole view
    scope = Scope({}, _Views(lambda name: dict(view)))
    assert _outcome(expression, scope) == _outcome(through_cel, scope)


def _rendered(template: Any, scope: Scope) -> tuple[str, Any]:
    try:
        return "value", json.dumps(template.render(scope), sort_keys=True)  # NaN-safe
    except EvaluationError as exc:
        return "error", str(exc)


@given(
    value=_json,
    head=st.sampled_from(["input", "steps.a.output", "steps.a", "steps.b.status"]),
    path=st.lists(st.sampled_from("abc"), min_size=0, max_size=2),
)
def test_a_field_path_hole_renders_what_the_hole_renders(
    value: Any, head: str, path: list[str]
) -> None:
    template = compile_template({"x": ["${" + ".".join([head, *path]) + "}"]})
    ((where, expression),) = template.expressions
    hole = _Hole(where, expression)  # what the template rendered before reading paths directly
    reference = dataclasses.replace(template, renderer=lambda scope: {"x": [hole.render(scope)]})
    view = {"status": "succeeded", "output": value, "error": None, "attempts": 1}
    scope = Scope({"input": value}, _Views(lambda name: dict(view)))
    assert _rendered(template, scope) == _rendered(reference, scope)
