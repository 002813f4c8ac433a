"""Fan-out: one unit per element, ``concurrency``, failure of an element, the fan-out limit."""

from __future__ import annotations

from orbit_actors.decide import ServerLimits
from tests.conftest import driver

FAN = """
steps:
  - {id: pick, for: input.items, as: it, task: t, input: {sku: "${it}", at: "${index}"}, retry: {max_attempts: 1}}
  - {id: done, value: "${steps.pick.output}"}
"""


def test_each_element_is_a_unit_keyed_by_index_with_its_own_input() -> None:
    d = driver(FAN, {"items": ["a", "b"]})
    assert d.scheduled() == ["pick[0]", "pick[1]"]
    assert d.unit("pick[1]").input == {"sku": "b", "at": 1}
    assert d.unit("pick[1]").idempotency_key == "ex-1/1/pick[1]"


def test_the_output_is_the_list_of_element_outputs_in_order() -> None:
    d = driver(FAN, {"items": ["a", "b", "c"]})
    for key in ("pick[2]", "pick[0]", "pick[1]"):
        d.run_task(key, key)
    assert d.unit("done").output == ["pick[0]", "pick[1]", "pick[2]"]


def test_an_empty_list_succeeds_at_once_with_an_empty_list() -> None:
    d = driver(FAN, {"items": []})
    assert d.unit("done").output == [] and d.state.status == "completed"


def test_concurrency_bounds_the_elements_in_flight() -> None:
    d = driver(FAN.replace("as: it,", "as: it, concurrency: 2,"), {"items": list("abcde")})
    assert d.scheduled() == ["pick[0]", "pick[1]"]
    d.run_task("pick[1]")
    assert d.scheduled() == ["pick[0]", "pick[2]"]


def test_the_first_element_failing_for_good_fails_the_step_and_cancels_the_rest() -> None:
    d = driver(FAN, {"items": ["a", "b", "c"]})
    token = d.dispatch("pick[1]")
    other = d.dispatch("pick[0]")
    d.fail(token, "OUT_OF_STOCK", retryable=False)
    cancelled = {e.step for e in d.of_type("StepCancelled")}
    assert cancelled == {"pick[0]", "pick[2]"}
    step_failed = [e for e in d.of_type("StepFailed") if e.step == "pick"]
    assert step_failed[0].error.code == "OUT_OF_STOCK"
    assert d.state.status == "failed"
    assert d.complete(other, "late").reason == "unknown token (execution finished or token invalid)"


def test_a_fan_out_over_the_limit_fails_the_step_with_limit_exceeded() -> None:
    d = driver(FAN, {"items": list("abc")}, limits=ServerLimits(max_fan_out=2))
    [failed] = d.of_type("StepFailed")
    assert failed.error.code == "LIMIT_EXCEEDED" and not failed.error.retryable
    assert d.state.status == "failed"


def test_on_error_continue_applies_to_a_fan_out_over_the_limit() -> None:
    body = FAN.replace("retry: {max_attempts: 1}}", "retry: {max_attempts: 1}, on_error: continue}")
    d = driver(body, {"items": list("abc")}, limits=ServerLimits(max_fan_out=2))
    assert d.state.status == "completed"


def test_a_for_that_is_not_a_list_fails_the_step() -> None:
    d = driver(FAN, {"items": "abc"})
    assert d.of_type("StepFailed")[0].error.code == "EXPRESSION_ERROR"


def test_attempts_of_a_fan_out_step_sum_over_its_elements() -> None:
    d = driver(FAN, {"items": ["a", "b"]})
    d.run_task("pick[0]")
    assert d.state.step_view("pick")["attempts"] == 2
    assert d.state.step_view("pick")["output"] is None
