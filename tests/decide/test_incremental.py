"""The decider visits only what new events can change (a phase when the state's indexes say it
may act, the main steps that depend on those resolved since its last look), and decides exactly
what a visit of every phase and every main step decides: checked at every call of every
generated run, and for a run decided with one definition and then another."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from orbit_actors.decide import decider
from orbit_actors.decide.context import Context, abort_cause
from orbit_actors.decide.steps import start_ready
from orbit_actors.decide.units import deliver_signals, fire_due_timers, settle_attempts
from orbit_actors.history import events as ev
from orbit_actors.history.state import ExecutionState
from orbit_actors.ir import compile_source
from orbit_actors.ir.plan import CompiledDefinition
from orbit_actors.testing import Driver
from tests.test_properties import actions, definitions, drive


def _every_main_step(ctx: Context) -> None:
    start_ready(ctx, ctx.definition.main)


def _complete_when_all_resolved(ctx: Context) -> None:
    state = ctx.state
    if not state.inflight and len(state.resolved_main) >= len(ctx.definition.main):
        decider._complete(ctx)


FULL_RUNNING = (
    decider._run_timeout,
    fire_due_timers,
    settle_attempts,
    deliver_signals,
    decider._failing_fan_outs,
    decider._open_fan_outs,
    _every_main_step,
    _complete_when_all_resolved,
)
FULL_ABORTING = decider._ABORTING  # the aborting run's phases each look, as before


def full_visit(state: ExecutionState, definition: CompiledDefinition, now: int) -> list[ev.Event]:
    """The decider as it was before it visited incrementally: every phase, every main step."""
    if not state.started or state.finished:
        return []
    ctx = Context(state, definition, now, abort_cause(state, definition))
    for phase in FULL_ABORTING if ctx.abort else FULL_RUNNING:
        phase(ctx)
        if ctx.events:
            return decider._within_history_limit(ctx)
    return []


@contextmanager
def compared_with_the_full_visit(calls: list[int]) -> Iterator[None]:
    """Every decider call made inside must decide what the full visit decides."""
    incremental = decider._decide

    def checked(
        state: ExecutionState, definition: CompiledDefinition, now: int
    ) -> tuple[list[ev.Event], bool, int | None]:
        expected = full_visit(state, definition, now)
        found = incremental(state, definition, now)
        assert found[0] == expected
        calls.append(1)
        return found

    with mock.patch.object(decider, "_decide", checked):
        yield


@st.composite
def dags(draw: st.DrawFn) -> str:
    """A workflow of task, value and sleep steps, each after any set of earlier steps."""
    count = draw(st.integers(2, 7))
    lines = ["workflow: dag", "version: 1.0.0", 'tasks: {t: {version: "1"}}', "signals: {go: null}"]
    lines.append("steps:")
    for index in range(count):
        after = draw(st.lists(st.integers(0, index - 1), unique=True)) if index else []
        names = ", ".join(f"s{i}" for i in sorted(after))
        kind = draw(st.sampled_from(["task: t, input: {n: 1}", "task: t, input: {n: 1}",
                                     "value: 1", "sleep: 1s"]))  # fmt: skip
        when = ", when: 'input.go'" if draw(st.integers(0, 5)) == 0 else ""
        lines.append(f"  - {{id: s{index}, after: [{names}], {kind}{when}}}")
    return "\n".join(lines) + "\n"


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(definitions(), actions, st.lists(st.integers(0, 9), max_size=4))
def test_every_decision_of_a_generated_run_is_the_full_visits(
    text: str, plan: list[tuple[str, int]], items: list[int]
) -> None:
    calls: list[int] = []
    with compared_with_the_full_visit(calls):
        d = Driver(compile_source(text)).start({"items": items})
        drive(d, plan)
    assert calls


@SETTINGS
@given(dags(), actions, st.booleans())
def test_every_decision_of_a_generated_dag_is_the_full_visits(
    text: str, plan: list[tuple[str, int]], go: bool
) -> None:
    calls: list[int] = []
    with compared_with_the_full_visit(calls):
        d = Driver(compile_source(text)).start({"go": go})
        drive(d, plan)
    assert calls


@SETTINGS
@given(dags(), dags(), actions, st.integers(0, 25))
def test_a_state_decided_with_another_definition_is_looked_at_whole(
    first: str, second: str, plan: list[tuple[str, int]], switch: int
) -> None:
    """The mark names the definition it was taken for: deciding the same state with another
    one (a migration, a candidate) looks at every main step."""
    calls: list[int] = []
    with compared_with_the_full_visit(calls):
        d = Driver(compile_source(first)).start({"go": True})
        drive(d, plan[:switch])
        other = compile_source(second)
        assume(not d.state.finished and set(d.state.steps) <= set(other.plans))
        d.definition = other
        d.record([])  # the first decision under the other definition
        drive(d, plan[switch:])
    assert calls


def test_a_join_starts_once_its_last_dependency_resolves() -> None:
    d = Driver(
        compile_source(
            'workflow: j\nversion: 1.0.0\ntasks: {t: {version: "1"}}\nsteps:\n'
            "  - {id: a, task: t}\n  - {id: b, task: t, after: []}\n"
            "  - {id: c, task: t, after: [a, b]}\n  - {id: d, task: t, after: [b]}\n"
        )
    ).start()
    assert d.scheduled() == ["a", "b"]
    d.run_task("b")
    assert d.scheduled() == ["a", "d"]
    looked: Any = d.state.looked
    assert looked == (d.definition, 1)  # b resolved, and the look after it started d
    d.run_task("a")
    assert d.scheduled() == ["d", "c"]
