"""Expressions checked against declared schemas (``orbit check``): an undeclared field of a
closed schema and a string compared with a number are refused; an open schema, a fan-out's
list of outputs and a method call are not; the server's compiler does not run these checks."""

from __future__ import annotations

from orbit_actors.ir import compile_source, load_definition
from orbit_actors.ir.typecheck import type_problems

HEAD = """
workflow: t
version: 1.0.0
input: {type: object, properties: {name: {type: string}, n: {type: integer}}}
tasks: {echo: {version: "1", output: {type: object, properties: {ok: {type: boolean}}}}}
"""


def reasons(steps: str) -> list[str]:
    definition, locator = load_definition(HEAD + steps)
    return [p.reason for p in type_problems(definition, locator)]


def test_an_undeclared_input_field_is_refused_with_a_suggestion() -> None:
    assert reasons("steps: [{id: a, value: '${input.nmae}'}]") == [
        "input has no field `nmae`; did you mean `name`?"
    ]


def test_a_declared_field_and_an_open_schema_pass() -> None:
    assert reasons("steps: [{id: a, value: '${input.name}'}]") == []
    open_input = HEAD.replace("properties: {name", "additionalProperties: true, properties: {name")
    definition, locator = load_definition(open_input + "steps: [{id: a, value: '${input.x}'}]")
    assert type_problems(definition, locator) == []


def test_a_string_compared_with_a_number_is_refused_either_way_round() -> None:
    found = reasons("steps: [{id: a, value: 1, when: 'input.name == 3 || 4 < input.name'}]")
    assert len(found) == 2 and all("compares input.name (string) with a number" in r for r in found)


def test_like_compared_with_like_passes() -> None:
    assert reasons("steps: [{id: a, value: 1, when: 'input.n > 3 && input.name == \"x\"'}]") == []


def test_a_task_output_is_checked_against_its_contract() -> None:
    found = reasons("steps: [{id: a, task: echo}, {id: b, value: '${steps.a.output.okk}'}]")
    assert found == ["steps.a.output has no field `okk`; did you mean `ok`?"]


def test_a_fan_out_output_and_a_method_call_are_not_fields() -> None:
    steps = """steps:
  - {id: a, task: echo, for: '[1, 2]'}
  - {id: b, value: '${steps.a.output.map(o, o.ok)}'}
"""
    assert reasons(steps) == []


def test_the_server_does_not_run_the_type_checks() -> None:
    compiled = compile_source(HEAD + "steps: [{id: a, value: '${input.nmae}'}]")
    assert compiled.name == "t"


def test_the_servers_messages_suggest_the_closest_name() -> None:
    try:
        compile_source(HEAD + "steps: [{id: a, task: ecoh}]")
    except Exception as exc:  # DefinitionError
        assert str(exc).endswith("task `ecoh` is not declared in `tasks`; did you mean `echo`?")
    else:
        raise AssertionError("accepted")
