"""Every deploy-time check of the language is refused with a path and a reason."""

from __future__ import annotations

import textwrap

import pytest

from orbit_actors.errors import DefinitionError
from orbit_actors.ir import compile_source

BASE = """
workflow: wf
version: 1.0.0
tasks: {t: {version: "1"}}
signals: {go: null}
"""


def problems(body: str) -> list[str]:
    with pytest.raises(DefinitionError) as caught:
        compile_source(BASE + textwrap.dedent(body))
    return [f"{p.path}: {p.reason}" for p in caught.value.problems]


def test_duplicate_step_ids_are_refused_across_steps_and_handlers() -> None:
    found = problems("""
        steps: [{id: a, task: t}]
        on_failure: [{id: a, task: t}]
    """)
    assert found == ["on_failure[0].id: duplicate step id `a`"]


def test_a_dependency_cycle_is_refused() -> None:
    found = problems("""
        steps:
          - {id: a, task: t, after: [b]}
          - {id: b, task: t, after: [a]}
    """)
    assert found == ["steps[0]: dependency cycle: a -> b -> a"]


def test_a_cycle_through_an_expression_reference_is_refused() -> None:
    found = problems("""
        steps:
          - {id: a, task: t, after: [], input: {x: "${steps.b.output}"}}
          - {id: b, task: t}
    """)
    assert any("dependency cycle" in p for p in found)


def test_after_naming_an_unknown_step_is_refused() -> None:
    assert problems("steps: [{id: a, task: t, after: [nope]}]") == [
        "steps[0].after[0]: `after` names unknown step `nope`"
    ]


def test_an_undeclared_task_is_refused() -> None:
    assert problems("steps: [{id: a, task: other}]") == [
        "steps[0].task: task `other` is not declared in `tasks`"
    ]


def test_an_undeclared_child_workflow_is_refused() -> None:
    assert problems("steps: [{id: a, workflow: kid}]") == [
        "steps[0].workflow: child workflow `kid` is not declared in `workflows`"
    ]


def test_an_undeclared_signal_is_refused() -> None:
    assert problems("steps: [{id: a, await: stop}]") == [
        "steps[0].await: signal `stop` is not declared in `signals`"
    ]


def test_an_expression_that_does_not_compile_names_its_field_path() -> None:
    [found] = problems("""
        steps:
          - {id: a, task: t}
          - {id: b, task: t}
          - {id: c, task: t, input: {amount: "${input.x +}"}}
    """)
    assert found.startswith("steps[2].input.amount: does not compile")


def test_an_unknown_step_in_an_expression_is_refused() -> None:
    assert problems("steps: [{id: a, task: t, when: steps.nope.status == 'succeeded'}]") == [
        "steps[0].when: unknown step `nope`"
    ]


def test_an_unknown_variable_is_refused() -> None:
    [found] = problems("steps: [{id: a, task: t, input: {x: '${item.sku}'}}]")
    assert found.startswith("steps[0].input.x: unknown variable `item`")


def test_item_and_index_exist_only_inside_a_fan_out() -> None:
    compile_source(
        BASE + "steps: [{id: a, task: t, for: '[1]', as: n, input: {x: '${n + index}'}}]"
    )
    [found] = problems("steps: [{id: a, task: t, for: '[1]', as: n, input: {x: '${item}'}}]")
    assert "unknown variable `item`" in found


def test_error_is_in_scope_only_in_handlers() -> None:
    [found] = problems("steps: [{id: a, task: t, input: {x: '${error.code}'}}]")
    assert "unknown variable `error`" in found
    compile_source(
        BASE
        + "steps: [{id: a, task: t}]\non_failure: [{id: h, task: t, input: {x: '${error.code}'}}]"
    )


def test_comprehension_variables_are_not_unknown() -> None:
    compile_source(BASE + "steps: [{id: a, value: '${[1, 2].map(v, v * 2).filter(w, w > 2)}'}]")


def test_a_schema_keyword_outside_the_subset_is_refused_with_its_path() -> None:
    assert problems(
        "input: {type: object, properties: {a: {type: string, format: email}}}\nsteps: [{id: a, task: t}]"
    ) == ["input.properties.a.format: unknown field"]


def test_a_default_that_does_not_match_its_schema_is_refused() -> None:
    assert problems(
        "input: {type: object, properties: {n: {type: integer, default: x}}}\nsteps: [{id: a, task: t}]"
    ) == [
        "input.properties.n.default: the default does not match its schema: default: expected integer, got string"
    ]


@pytest.mark.parametrize("name", ["orbit.http.request", "workflow:x"])
def test_reserved_task_names_are_refused(name: str) -> None:
    text = f"workflow: wf\nversion: 1.0.0\ntasks: {{'{name}': {{version: '1'}}}}\nsteps: [{{id: a, value: 1}}]"
    with pytest.raises(DefinitionError) as caught:
        compile_source(text)
    assert [p.reason for p in caught.value.problems] == [
        f"task name `{name}` is reserved (orbit.*, workflow:*)"
    ]


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [("workflow", "Bad Name", "must match"), ("version", "'1.0'", "MAJOR.MINOR.PATCH")],
)
def test_a_name_or_version_of_the_wrong_form_is_refused(
    field: str, value: str, needle: str
) -> None:
    text = (
        BASE.replace(f"{field}: ", f"{field}_old: ", 1)
        + f"{field}: {value}\nsteps: [{{id: a, task: t}}]"
    )
    with pytest.raises(DefinitionError, match=needle):
        compile_source(text.replace(f"{field}_old: ", "#"))


def test_a_step_id_of_the_wrong_form_is_refused() -> None:
    [found] = problems("steps: [{id: Bad-Id, task: t}]")
    assert found.startswith("steps[0].id: step id 'Bad-Id' must match")


def test_a_step_needs_exactly_one_kind() -> None:
    [found] = problems("steps: [{id: a, task: t, sleep: 1s}]")
    assert "exactly one kind field" in found and "task, sleep" in found


def test_fields_that_do_not_fit_the_kind_are_refused() -> None:
    [found] = problems("steps: [{id: a, sleep: 1s, retry: {max_attempts: 2}}]")
    assert "`retry` does not apply to a sleep step" in found


def test_continue_as_new_cannot_be_a_handler() -> None:
    found = problems("steps: [{id: a, task: t}]\non_cancel: [{id: h, continue_as_new: {}}]")
    assert found == ["on_cancel[0].continue_as_new: a handler step cannot continue as new"]


def test_all_problems_are_reported_together() -> None:
    found = problems("""
        steps:
          - {id: a, task: nope}
          - {id: b, await: nope}
          - {id: c, task: t, when: "steps.zz.output"}
    """)
    assert len(found) == 3
