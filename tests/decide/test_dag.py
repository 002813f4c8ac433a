"""DAG order: ``after``, implicit references, parallel branches, ``when``."""

from __future__ import annotations

from tests.conftest import driver


def test_steps_run_in_list_order_by_default() -> None:
    d = driver("steps: [{id: a, task: t}, {id: b, task: t}]")
    assert d.scheduled() == ["a"]
    d.run_task("a")
    assert d.scheduled() == ["b"]


def test_after_empty_starts_a_branch_at_once() -> None:
    d = driver("steps: [{id: a, task: t}, {id: b, task: t, after: []}]")
    assert d.scheduled() == ["a", "b"]


def test_a_step_waits_for_every_step_named_in_after() -> None:
    d = driver("""
        steps:
          - {id: a, task: t}
          - {id: b, task: t, after: []}
          - {id: c, task: t, after: [a, b]}
    """)
    d.run_task("a")
    assert d.scheduled() == ["b"]
    d.run_task("b")
    assert d.scheduled() == ["c"]


def test_a_step_referenced_in_an_expression_becomes_a_dependency() -> None:
    d = driver("""
        steps:
          - {id: a, task: t}
          - {id: b, task: t, after: []}
          - {id: c, task: t, after: [a], input: {x: "${steps.b.output.v}"}}
    """)
    d.run_task("a")
    assert "c" not in d.scheduled()
    d.run_task("b", {"v": 7})
    assert d.unit("c").input == {"x": 7}


def test_a_false_when_skips_the_step_and_the_next_still_runs() -> None:
    d = driver(
        """
        steps:
          - {id: a, task: t, when: input.go}
          - {id: b, task: t}
    """,
        {"go": False},
    )
    assert d.of_type("StepSkipped")[0].step == "a"
    assert d.scheduled() == ["b"]
    assert d.state.step_view("a") == {
        "status": "skipped",
        "output": None,
        "error": None,
        "attempts": 0,
    }


def test_a_when_that_is_not_a_boolean_fails_the_step_with_expression_error() -> None:
    d = driver("steps: [{id: a, task: t, when: input.n}]", {"n": 1})
    [failed] = d.of_type("StepFailed")
    assert failed.error.code == "EXPRESSION_ERROR" and failed.error.message.startswith(
        "steps[0].when:"
    )
    assert d.state.status == "failed"


def test_a_template_error_fails_the_step_not_the_engine() -> None:
    d = driver("steps: [{id: a, task: t, input: {x: '${input.missing}'}}]", {})
    [failed] = d.of_type("StepFailed")
    assert failed.error.code == "EXPRESSION_ERROR" and not failed.error.retryable
    assert d.state.status == "failed"


def test_the_workflow_completes_with_its_output_template() -> None:
    d = driver(
        """
        steps: [{id: a, task: t}]
        output: {got: "${steps.a.output.v}", n: "${input.n}"}
    """,
        {"n": 2},
    )
    d.run_task("a", {"v": "x"})
    assert d.types()[-1] == "WorkflowCompleted"
    assert d.state.output == {"got": "x", "n": 2}


def test_the_output_defaults_to_an_empty_object() -> None:
    d = driver("steps: [{id: a, value: 1}]")
    assert d.state.status == "completed" and d.state.output == {}


def test_a_null_input_becomes_an_empty_object() -> None:
    d = driver("steps: [{id: a, value: '${input}'}]", None)
    assert d.state.input == {}


def test_on_error_continue_lets_the_workflow_go_on_with_the_error_visible() -> None:
    d = driver("""
        steps:
          - {id: a, task: t, on_error: continue, retry: {max_attempts: 1}}
          - {id: b, value: "${steps.a.error.code}"}
        output: {b: "${steps.b.output}", a: "${steps.a.status}"}
    """)
    d.fail(d.dispatch("a"), "NOPE")
    assert d.state.status == "completed"
    assert d.state.output == {"b": "NOPE", "a": "failed"}
