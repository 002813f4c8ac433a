"""The check process's work on a chunk of stored histories: IR as text, each history as its
stored JSON segments (one per commit), the answer exactly what ``first_divergence`` says of the
decoded history."""

from __future__ import annotations

import json

from orbit_actors.decide.compat import first_divergence
from orbit_actors.decide.compat_chunk import check_histories
from orbit_actors.history.events import events_to_json
from orbit_actors.ir import CompiledDefinition
from tests.conftest import definition

from .test_compat import BASE, lookup, waiting_for_approval

INSERTED = BASE.replace(
    "  - {id: wait,", "  - {id: audit, task: t2, input: {x: 1}}\n  - {id: wait,"
)


def ir_text(compiled: CompiledDefinition) -> str:
    return json.dumps(compiled.ir.to_ir_dict(), sort_keys=True)


def test_a_chunk_answers_each_divergent_history_as_first_divergence_does() -> None:
    base, history = waiting_for_approval()
    segments = [events_to_json(history[:4]), events_to_json(history[4:])]  # two commits
    candidate = definition(INSERTED)
    expected = first_divergence(history, candidate, lookup(base))
    assert expected is not None
    found = check_histories(
        ir_text(candidate), {base.definition_hash: ir_text(base)}, [("a", segments)]
    )
    assert found == {"a": (expected.seq, expected.recorded, expected.candidate)}


def test_a_compatible_candidate_leaves_the_chunk_without_divergences() -> None:
    base, history = waiting_for_approval()
    items = [(f"e{i}", [events_to_json(history)]) for i in range(3)]
    assert check_histories(ir_text(base), {base.definition_hash: ir_text(base)}, items) == {}
