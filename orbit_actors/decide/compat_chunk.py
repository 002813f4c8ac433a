"""The upgrade check over a chunk of stored histories, as the check process runs it (pure): the
candidate's and the base versions' IR come as text and are compiled once per process; each history
comes as its stored JSON segments and is decoded here, so the serving process never decodes."""

from __future__ import annotations

import json

from ..history.events import Event, events_from_json
from ..ir import CompiledDefinition, compile_ir
from .compat import first_divergence

Found = dict[str, tuple[int, str, str]]
"""By execution id, the first divergence: (seq, recorded, candidate)."""

_COMPILED: dict[tuple[str, int | None], CompiledDefinition] = {}
"""Compiled definitions by IR text and the server's default schedule-to-start (a process checks
many chunks against the same few versions)."""
_KEPT = 32


def compiled(ir: str, schedule_to_start_ms: int | None = None) -> CompiledDefinition:
    """The definition of IR text ``ir``, compiled once per process, with the server's default
    schedule-to-start (what its units' ``start_by_ms`` were recorded with)."""
    key = (ir, schedule_to_start_ms)
    found = _COMPILED.get(key)
    if found is None:
        if len(_COMPILED) >= _KEPT:  # every candidate checked is new text: keep a few
            _COMPILED.clear()
        found = compile_ir(json.loads(ir))
        found.default_schedule_to_start_ms = schedule_to_start_ms
        _COMPILED[key] = found
    return found


def check_histories(
    candidate_ir: str,
    bases: dict[str, str],
    items: list[tuple[str, list[str]]],
    schedule_to_start_ms: int | None = None,
) -> Found:
    """Replay each history (stored JSON segments, by execution id) through the candidate; the
    divergent ones. ``bases`` holds the IR of every version the histories may have run under,
    by hash."""
    candidate = compiled(candidate_ir, schedule_to_start_ms)
    known: dict[str, CompiledDefinition | None] = {}

    def lookup(definition_hash: str) -> CompiledDefinition | None:
        if definition_hash not in known:
            ir = bases.get(definition_hash)
            known[definition_hash] = None if ir is None else compiled(ir, schedule_to_start_ms)
        return known[definition_hash]

    found: Found = {}
    for execution_id, segments in items:
        divergence = first_divergence(_decoded(segments), candidate, lookup)
        if divergence is not None:
            found[execution_id] = (divergence.seq, divergence.recorded, divergence.candidate)
    return found


def _decoded(segments: list[str]) -> list[Event]:
    if len(segments) == 1:
        return events_from_json(segments[0])
    return [event for segment in segments for event in events_from_json(segment)]
