"""The pure rules of batches: the pacer hands out turns 1/rate apart in order and never in the
past; a refusal means "already done" only for the state the action leaves behind."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbit_actors.store.base import ExecutionRow
from orbit_actors.supervisor.batching import already_done
from orbit_actors.supervisor.pacing import Pacer

ROW = ExecutionRow("x", "wf", "1.0.0", "h", "running", 1, 0)


@given(
    st.floats(min_value=0.5, max_value=10_000),
    st.lists(st.floats(min_value=0, max_value=100), min_size=1, max_size=50),
)
def test_turns_are_at_least_one_over_rate_apart_and_never_before_now(
    rate: float, gaps: list[float]
) -> None:
    pacer, now, turns = Pacer(rate), 0.0, []
    for gap in gaps:
        now += gap / 1000
        turn = pacer.next_turn(now)
        assert turn >= now
        turns.append(turn)
    assert all(b - a >= 1 / rate - 1e-9 for a, b in pairwise(turns))


def test_a_pause_between_turns_gives_no_burst_after_it() -> None:
    pacer = Pacer(10)
    assert [pacer.next_turn(0) for _ in range(3)] == pytest.approx([0, 0.1, 0.2])
    assert [pacer.next_turn(5) for _ in range(2)] == pytest.approx([5, 5.1])


def test_a_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        Pacer(0)


@pytest.mark.parametrize(
    ("action", "code", "status", "done"),
    [
        ("terminate", "EXECUTION_FINISHED", "terminated", True),
        ("terminate", "EXECUTION_FINISHED", "completed", False),
        ("cancel", "EXECUTION_FINISHED", "cancelled", True),
        ("cancel", "EXECUTION_FINISHED", "terminated", False),
        ("unpause", "NOT_PAUSED", "running", True),
        ("pause", "EXECUTION_FINISHED", "completed", False),
        ("rerun", "EXECUTION_RUNNING", "running", False),
    ],
)
def test_only_the_state_an_action_leaves_counts_as_already_done(
    action: str, code: str, status: str, done: bool
) -> None:
    assert already_done(action, code, replace(ROW, status=status)) is done


def test_a_purged_execution_is_never_already_done() -> None:
    assert not already_done("terminate", "NOT_FOUND", None)
