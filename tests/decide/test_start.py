"""Starting a run: defaults, strict or lenient validation, payload and id checks, limits."""

from __future__ import annotations

import pytest

from orbit_actors.decide import ServerLimits, check_execution_id, effective_limits, start_run
from orbit_actors.errors import InvalidExecutionIdError, InvalidInputError, PayloadTooLargeError
from orbit_actors.history.events import ParentRef, WorkflowCreated, WorkflowStarted
from tests.conftest import definition

WF = definition("""
input: {type: object, required: [n], properties: {n: {type: number}, tag: {type: string, default: x}}}
limits: {max_fan_out: 5, max_payload_bytes: 4096}
steps: [{id: a, task: t}]
""")


def test_start_commits_created_and_started_with_defaults_applied() -> None:
    limits = effective_limits(ServerLimits(), WF)
    created, started = start_run(WF, execution_id="e", input={"n": 1}, now=5, limits=limits)
    assert isinstance(created, WorkflowCreated) and isinstance(started, WorkflowStarted)
    assert created.input == {"n": 1.0, "tag": "x"}
    assert (created.seq, started.seq) == (1, 2)


def test_the_stricter_limits_are_recorded_in_workflow_created() -> None:
    limits = effective_limits(ServerLimits(max_fan_out=100, max_history_events=10), WF)
    assert (limits.max_fan_out, limits.max_history_events, limits.max_payload_bytes) == (
        5,
        10,
        4096,
    )


def test_a_callers_input_is_validated_strictly() -> None:
    limits = effective_limits(ServerLimits(), WF)
    with pytest.raises(InvalidInputError, match=r"^workflow input is invalid at \$\.extra: "):
        start_run(WF, execution_id="e", input={"n": 1, "extra": 1}, now=0, limits=limits)


def test_a_childs_input_is_validated_leniently() -> None:
    limits = effective_limits(ServerLimits(), WF)
    parent = ParentRef(execution_id="p", step="k")
    created, _ = start_run(
        WF, execution_id="p.k", input={"n": 1, "extra": 1}, now=0, limits=limits, parent=parent
    )
    assert isinstance(created, WorkflowCreated)
    assert created.input["extra"] == 1 and created.parent == parent


def test_an_input_that_is_not_an_object_is_invalid() -> None:
    limits = effective_limits(ServerLimits(), WF)
    with pytest.raises(InvalidInputError, match=r"at \$: expected object, got array"):
        start_run(WF, execution_id="e", input=[1], now=0, limits=limits)


def test_an_oversized_input_is_refused_before_anything_is_recorded() -> None:
    limits = effective_limits(ServerLimits(), WF)
    with pytest.raises(
        PayloadTooLargeError, match=r"^execution input is \d+ bytes; the limit is 4096"
    ):
        start_run(WF, execution_id="e", input={"n": 1, "pad": "x" * 5000}, now=0, limits=limits)


@pytest.mark.parametrize("bad", ["", "a" * 201, "has space", "slash/no", "ünï"])
def test_execution_ids_are_checked(bad: str) -> None:
    with pytest.raises(
        InvalidExecutionIdError, match="^execution ids may contain letters, digits and - _ . :"
    ):
        check_execution_id(bad)


def test_a_good_execution_id_passes() -> None:
    check_execution_id("order-7.send_invoice:2024" + "x" * 100)
