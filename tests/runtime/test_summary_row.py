"""The summary row a commit writes names every field of the state it summarises (``row_of`` is
built positionally, so a field out of place must show here)."""

from __future__ import annotations

from orbit_actors.decide import transitions as pure
from orbit_actors.history.apply import replay
from orbit_actors.history.events import ParentRef
from orbit_actors.ir import compile_source
from orbit_actors.store.base import ExecutionRow
from orbit_actors.views import row_of

KEYED = """
workflow: keyed
version: 1.0.0
tasks: {t: {version: "1"}}
flow: {concurrency: {key: '${input.customer}', limit: 2}}
steps: [{id: a, task: t}]
"""


def test_the_row_of_a_state_carries_each_field_in_its_place() -> None:
    definition = compile_source(KEYED)
    events = pure.start_run(
        definition, execution_id="x1", input={"customer": "c7"}, now=1_000,
        limits=pure.effective_limits(pure.ServerLimits(), definition),
        parent=ParentRef(execution_id="p1", step="s"), schedule_id="sched-1",
    )  # fmt: skip
    state = replay(events)
    state.paused = True
    assert row_of(state) == ExecutionRow(
        execution_id="x1", workflow="keyed", version="1.0.0",
        definition_hash=definition.definition_hash, status=state.status, run=1,
        started_at_ms=1_000, closed_at_ms=None, parent_id="p1", schedule_id="sched-1",
        last_seq=state.last_seq, wake_at_ms=None, busy=True, paused=True, flow_key="c7",
    )  # fmt: skip
