"""Loading definitions: every error names the file, line, column and field path; no traceback."""

from __future__ import annotations

import pytest

from orbit_actors.errors import DefinitionError
from orbit_actors.ir import compile_source, load_definition


def problems(text: str) -> list[str]:
    with pytest.raises(DefinitionError) as caught:
        compile_source(text, "wf.yaml")
    return [str(p) for p in caught.value.problems]


def test_an_unknown_field_is_named_with_line_and_column() -> None:
    text = "workflow: x\nversion: 1.0.0\nsteps:\n  - id: a\n    value: 1\n    colour: red\n"
    assert problems(text) == ["wf.yaml:6:5: steps[0].colour: unknown field"]


def test_a_yaml_syntax_error_has_a_position() -> None:
    [problem] = problems("workflow: x\nsteps: [\n")
    assert problem.startswith("wf.yaml:3:1: invalid YAML")


def test_a_duplicate_key_is_refused() -> None:
    [problem] = problems("workflow: x\nworkflow: y\n")
    assert problem == "wf.yaml:2:1: workflow: duplicate key 'workflow'"


def test_an_empty_document_is_refused() -> None:
    assert problems("") == ["wf.yaml:1:1: the document is empty"]


def test_a_document_that_is_not_a_mapping_is_refused() -> None:
    assert problems("- 1\n- 2\n") == ["wf.yaml:1:1: a definition must be a mapping (object)"]


def test_dates_stay_strings_so_every_value_is_json() -> None:
    definition, _ = load_definition(
        "workflow: x\nversion: 1.0.0\nsteps:\n  - {id: a, value: 2024-01-01}\n"
    )
    assert definition.steps[0].value == "2024-01-01"


def test_a_missing_required_field_is_named() -> None:
    assert problems("workflow: x\nversion: 1.0.0\n") == ["wf.yaml:1:1: steps: is required"]


def test_a_number_as_workflow_version_explains_the_quoting() -> None:
    [problem] = problems("workflow: x\nversion: 1.0\nsteps: [{id: a, value: 1}]\n")
    assert "semantic version string" in problem and problem.startswith("wf.yaml:2:")


def test_a_yaml_number_as_contract_version_is_its_string() -> None:
    text = "workflow: x\nversion: 1.0.0\ntasks: {t: {version: 2}}\nsteps: [{id: a, task: t}]\n"
    assert compile_source(text).ir.tasks["t"].version == "2"


def test_json_is_yaml_too() -> None:
    text = '{"workflow": "x", "version": "1.0.0", "steps": [{"id": "a", "value": 1}]}'
    assert compile_source(text).name == "x"


@pytest.mark.parametrize(
    "text",
    ["{", "workflow: [", "!!python/object:os.system {}", "steps: 5", "workflow: 5\nversion: 1\nsteps: 5",
     "a: *b", "workflow: x\nversion: 1.0.0\nsteps: [{id: 1}]", "? [a]\n: 1", "\t"],
)  # fmt: skip
def test_malformed_documents_raise_only_definition_errors(text: str) -> None:
    with pytest.raises(DefinitionError):
        compile_source(text, "wf.yaml")
