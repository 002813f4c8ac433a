"""Properties of the rerun plan over random step graphs: a step runs again exactly when it is
``from_step`` or depends on a step that runs again; every other step is reused."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orbit_actors.ir import compile_source
from orbit_actors.testing import Driver


@st.composite
def graphs(draw: st.DrawFn) -> tuple[str, list[str], str]:
    """A definition of 2..7 task steps, each after a random subset of the steps before it (or
    the implicit "the step before"), and a step to rerun from."""
    count = draw(st.integers(2, 7))
    ids = [f"s{n}" for n in range(count)]
    lines = []
    for n, step_id in enumerate(ids):
        if n and draw(st.booleans()):
            after = draw(st.lists(st.sampled_from(ids[:n]), unique=True))
            lines.append(f"  - {{id: {step_id}, task: t, after: [{', '.join(after)}]}}")
        else:
            lines.append(f"  - {{id: {step_id}, task: t}}")
    source = 'workflow: g\nversion: 1.0.0\ntasks: {t: {version: "1"}}\nsteps:\n' + "\n".join(lines)
    return source, ids, draw(st.sampled_from(ids))


@settings(max_examples=60, deadline=None)
@given(graphs())
def test_a_step_reruns_exactly_when_it_depends_on_the_step_rerun_from(
    graph: tuple[str, list[str], str],
) -> None:
    source, ids, start = graph
    definition = compile_source(source)
    d = Driver(definition, execution_id="g").start({})
    while d.scheduled():
        d.run_task(d.scheduled()[0], {})
    assert d.state.status == "completed"
    plan = d.plan_rerun(start)
    again = set(plan.rerun)
    assert sorted(plan.reused + plan.rerun, key=ids.index) == ids
    assert start in again
    for step_id in ids:
        depends = any(dep in again for dep in definition.plans[step_id].after)
        assert (step_id in again) == (step_id == start or depends)
    d.rerun(start)
    assert [e.step for e in d.of_type("StepReused")] == plan.reused
    assert set(d.scheduled()) <= again
