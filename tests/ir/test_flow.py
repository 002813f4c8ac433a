"""Flow control in the language: priority, concurrency keys and rate limits are checked at
registration (path and allowed range), and evaluated at start to a priority and a key or refused."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbit_actors.decide.transitions import start_flow
from orbit_actors.errors import DefinitionError, FlowKeyError, InvalidInputError
from orbit_actors.ir import compile_source
from orbit_actors.ir.flow import input_reads
from orbit_actors.ir.plan import CompiledDefinition

HEAD = """
workflow: pay
version: 1.0.0
input:
  type: object
  properties: {customer: {type: string}, tier: {type: string}, n: {},
               account: {type: object, properties: {region: {type: string}}}}
steps: [{id: c, task: charge}]
"""


def compiled(body: str) -> CompiledDefinition:
    return compile_source(HEAD + textwrap.dedent(body))


def problems(body: str) -> list[str]:
    with pytest.raises(DefinitionError) as caught:
        compiled(body)
    return [f"{p.path}: {p.reason}" for p in caught.value.problems]


FULL = """
flow:
  priority: '${input.tier == "gold" ? 1 : 5}'
  concurrency: {key: '${input.customer}', limit: 2, on_full: queue}
tasks:
  charge: {version: "1", rate_limit: {key: '${input.customer}', limit: 10, per: 1s}}
"""


def test_the_spec_example_compiles_and_keeps_its_flow_in_the_ir() -> None:
    definition = compiled(FULL)
    ir = definition.ir.to_ir_dict()
    assert ir["flow"] == {
        "priority": '${input.tier == "gold" ? 1 : 5}',
        "concurrency": {"key": "${input.customer}", "limit": 2, "on_full": "queue"},
    }
    assert ir["tasks"]["charge"]["rate_limit"] == {
        "key": "${input.customer}", "limit": 10, "per": 1000
    }  # fmt: skip
    assert definition.flow.rate_limits["charge"].per_ms == 1000
    assert definition.flow.declared


def test_a_definition_without_flow_declares_none() -> None:
    definition = compiled('tasks: {charge: {version: "1"}}')
    assert not definition.flow.declared
    assert start_flow(definition, {"customer": "a"}) is None


def test_a_concurrency_limit_below_one_is_refused_with_its_range() -> None:
    found = problems("""
        flow: {concurrency: {key: '${input.customer}', limit: 0}}
        tasks: {charge: {version: "1"}}
    """)
    assert found == ["flow.concurrency.limit: limit must be at least 1 (got 0)"]


def test_a_rate_limit_below_one_or_a_window_below_10ms_is_refused() -> None:
    found = problems("""
        tasks: {charge: {version: "1", rate_limit: {key: x, limit: 0, per: 5ms}}}
    """)
    assert found == [
        "tasks.charge.rate_limit.limit: limit must be at least 1 (got 0)",
        "tasks.charge.rate_limit.per: per must be at least 10ms (got 5ms)",
    ]


@pytest.mark.parametrize("priority", [0, 10, -1])
def test_a_fixed_priority_outside_1_to_9_is_refused(priority: int) -> None:
    found = problems(f"""
        flow: {{priority: {priority}}}
        tasks: {{charge: {{version: "1"}}}}
    """)
    assert found == [f"flow.priority: priority must be from 1 (first) to 9 (got {priority})"]


def test_an_on_full_other_than_queue_skip_or_replace_is_refused() -> None:
    found = problems("""
        flow: {concurrency: {key: k, limit: 1, on_full: wait}}
        tasks: {charge: {version: "1"}}
    """)
    assert len(found) == 1 and found[0].startswith("flow.concurrency.on_full: ")
    assert "'queue', 'skip' or 'replace'" in found[0]


def test_a_key_reading_an_undeclared_input_field_is_refused_with_its_path() -> None:
    found = problems("""
        flow: {concurrency: {key: '${input.custmer}', limit: 1}}
        tasks: {charge: {version: "1", rate_limit: {key: '${input.account.regoin}', limit: 1,
                                                    per: 1s}}}
    """)
    assert found == [
        "flow.concurrency.key: reads `input.custmer`, which the input schema does not declare "
        "(input declares: account, customer, n, tier)",
        "tasks.charge.rate_limit.key: reads `input.account.regoin`, which the input schema does "
        "not declare (input.account declares: region)",
    ]


def test_a_priority_reading_another_variable_than_input_is_refused() -> None:
    found = problems("""
        flow: {priority: '${steps.c.output.p}'}
        tasks: {charge: {version: "1"}}
    """)
    assert found == [
        "flow.priority: unknown variable `steps` (a flow expression reads only `input`)"
    ]


def test_without_an_input_schema_any_field_may_be_read() -> None:
    text = """
        workflow: free
        version: 1.0.0
        flow: {concurrency: {key: '${input.anything}', limit: 1}}
        tasks: {charge: {version: "1"}}
        steps: [{id: c, task: charge}]
    """
    assert compile_source(textwrap.dedent(text)).flow.concurrency is not None


def test_a_start_evaluates_its_priority_and_key() -> None:
    definition = compiled(FULL)
    flow = start_flow(definition, {"customer": "acme", "tier": "gold"})
    assert flow is not None and (flow.priority, flow.key) == (1, "acme")
    flow = start_flow(definition, {"customer": "acme", "tier": "silver"})
    assert flow is not None and flow.priority == 5


def test_a_numeric_key_is_its_json_text() -> None:
    definition = compiled("""
        flow: {concurrency: {key: '${input.n}', limit: 1}}
        tasks: {charge: {version: "1"}}
    """)
    flow = start_flow(definition, {"n": 42})
    assert flow is not None and flow.key == "42"


@pytest.mark.parametrize(
    ("value", "kind"),
    [(None, "null"), (True, "a boolean"), ({"a": 1}, "an object"), ([1], "an array")],
)
def test_a_key_that_is_not_a_string_or_number_is_refused_at_start(value: Any, kind: str) -> None:
    definition = compiled("""
        flow: {concurrency: {key: '${input.n}', limit: 1}}
        tasks: {charge: {version: "1"}}
    """)
    with pytest.raises(FlowKeyError) as caught:
        start_flow(definition, {"n": value})
    assert caught.value.message == (
        f"flow.concurrency.key evaluated to {kind}; a key must be a string or a number"
    )


def test_a_key_reading_a_missing_field_is_refused_at_start() -> None:
    definition = compiled(FULL)
    with pytest.raises(FlowKeyError) as caught:
        start_flow(definition, {"tier": "gold"})
    assert caught.value.message.startswith("flow.concurrency.key cannot be evaluated: ")


def test_a_priority_outside_1_to_9_at_start_is_refused_with_the_range() -> None:
    definition = compiled("""
        flow: {priority: '${input.n}'}
        tasks: {charge: {version: "1"}}
    """)
    with pytest.raises(InvalidInputError) as caught:
        start_flow(definition, {"n": 12})
    assert caught.value.message == (
        "flow.priority evaluated to 12; a priority is an integer from 1 (first) to 9"
    )


def test_reads_inside_string_literals_are_not_reads() -> None:
    assert input_reads('input.a.b == "input.x" || input["c"].d') == [("a", "b"), ("c", "d")]


NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)


@given(st.lists(NAMES, min_size=1, max_size=4))
def test_any_dotted_read_is_found_with_its_fields(fields: list[str]) -> None:
    source = "size(input." + ".".join(fields) + ") > 0"
    assert input_reads(source) == [tuple(fields)]


@settings(deadline=None)
@given(st.integers(-1000, 1000))
def test_a_fixed_priority_compiles_exactly_when_it_is_1_to_9(priority: int) -> None:
    body = f'flow: {{priority: {priority}}}\ntasks: {{charge: {{version: "1"}}}}'
    if 1 <= priority <= 9:
        assert compiled(body).flow.priority == priority
    else:
        assert problems(body)[0].startswith("flow.priority: ")


NUMBERS_KEYED = """
flow: {concurrency: {key: '${input.n}', limit: 1}}
tasks: {charge: {version: "1"}}
"""
JSON_NUMBERS = st.floats(allow_nan=False, allow_infinity=False)


@settings(deadline=None)
@given(st.one_of(st.integers(-(2**53), 2**53), st.text(max_size=20), JSON_NUMBERS))
def test_every_string_or_number_is_a_key(value: Any) -> None:
    flow = start_flow(compiled(NUMBERS_KEYED), {"n": value})
    assert flow is not None and isinstance(flow.key, str)
