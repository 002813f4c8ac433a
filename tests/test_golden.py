"""Golden histories: every checked-in history is replayed event by event and, at each point, the
decider must propose exactly what the history recorded next (or nothing, before an outside event);
at the end it must be at its fixpoint. A decider change that no longer explains yesterday's
histories fails here. One deliberately broken history proves the check can fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orbit_actors.decide import decide
from orbit_actors.history import ExecutionState, apply, event_from_json
from orbit_actors.history.events import Event
from orbit_actors.ir import CompiledDefinition, compile_source

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"


class Divergence(AssertionError):
    """The decider does not explain a recorded history."""


def load(path: Path) -> tuple[CompiledDefinition, list[Event]]:
    header, *lines = path.read_text().splitlines()
    definition = compile_source((ROOT / json.loads(header)["definition"]).read_text())
    return definition, [event_from_json(line) for line in lines]


OPENING = frozenset({"WorkflowCreated", "WorkflowStarted", "StepReused"})
"""The events a run opens with, which a start or a rerun records before the decider is asked."""


def check(definition: CompiledDefinition, history: list[Event]) -> None:
    """Raise :class:`Divergence` where the decider and the history disagree."""
    state = ExecutionState()
    position = 0
    while position < len(history) and history[position].type in OPENING:
        apply(state, history[position])
        position += 1
    while position < len(history):
        proposed = (
            decide(state, definition, history[position].timestamp_ms) if state.created else []
        )
        recorded = history[position : position + len(proposed)]
        if proposed and proposed != recorded:
            raise Divergence(
                f"at seq {position + 1} the decider proposes {proposed!r}, the history has {recorded!r}"
            )
        for event in recorded if proposed else history[position : position + 1]:
            apply(state, event)
        position += max(len(proposed), 1)
    if state.steps or state.finished:
        final = decide(state, definition, history[-1].timestamp_ms)
        if final:
            raise Divergence(f"after the last event the decider still proposes {final!r}")


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.jsonl")), ids=lambda p: p.name)
def test_the_decider_explains_every_golden_history(path: Path) -> None:
    definition, history = load(path)
    assert definition.definition_hash == history[0].definition_hash  # type: ignore[union-attr]
    check(definition, history)


def test_a_broken_history_is_caught() -> None:
    definition, history = load(GOLDEN / "broken" / "order_saga_wrong_input.jsonl")
    with pytest.raises(Divergence, match="StepScheduled"):
        check(definition, history)


def test_there_are_golden_histories_for_every_kind_of_ending() -> None:
    endings = {load(p)[1][-1].type for p in GOLDEN.glob("*.jsonl")}
    assert {"WorkflowCompleted", "WorkflowFailed", "WorkflowContinuedAsNew"} <= endings
