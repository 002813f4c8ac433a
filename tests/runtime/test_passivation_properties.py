"""Passivation is invisible: any sequence of signals, queries and waits gives the same history
(event types and times) and the same answers whether executions leave memory or not."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trio.testing import MockClock

from orbit_actors.actors.execution import Passivation
from orbit_actors.runtime import RuntimeConfig, open_runtime
from orbit_actors.testing import MemoryStore

from .conftest import workflow

TWO_WAITS = workflow("""
signals: {go: {type: object}}
queries: {stage: 'steps.second.status'}
steps:
  - {id: first, await: go, timeout: 2h}
  - {id: nap, sleep: 90s}
  - {id: second, await: go}
""")
ACTIONS = st.lists(
    st.one_of(
        st.just(("signal", 0)),
        st.just(("query", 0)),
        st.tuples(st.just("sleep"), st.sampled_from([1, 5, 30, 120, 4000, 8000])),
    ),
    max_size=8,
)


async def run(actions: list[tuple[str, int]], passivation: Passivation | None) -> Any:
    """What a client sees of one execution driven by ``actions``."""
    config = RuntimeConfig(passivation=passivation)
    async with open_runtime(MemoryStore(), config) as runtime:
        await runtime.register_definition(TWO_WAITS)
        await runtime.start("wf", execution_id="e")
        answers: list[Any] = []
        for action, seconds in actions:
            if action == "sleep":
                await trio.sleep(seconds)
                continue
            try:
                if action == "signal":
                    answers.append(await runtime.signal("e", "go", {}))
                else:
                    answers.append(await runtime.query("e", "stage"))
            except Exception as exc:  # a finished execution refuses signals: the same way
                answers.append(type(exc).__name__)
        # what falls due at the instant the last sleep ends settles first: a passivated
        # execution's wake-up at that same instant replays before it fires, one hop later
        await trio.testing.wait_all_tasks_blocked()
        events = await runtime.history("e")
        first = events[0].timestamp_ms
        return answers, [(e.type, e.timestamp_ms - first) for e in events]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(actions=ACTIONS)
async def test_passivation_changes_nothing_a_client_sees(
    autojump_clock: MockClock, actions: list[tuple[str, int]]
) -> None:
    quick = Passivation(idle_s=2.0, near_s=60.0)
    assert await run(actions, quick) == await run(actions, None)
