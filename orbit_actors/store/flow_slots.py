"""Concurrency slots: which executions of each concurrency key run or wait, kept by the store in
the same transaction as the commits that start, queue and end them.

A slot is taken by the commit that starts an execution (its ``admit`` is checked against the
slots already taken, in that transaction), handed to a queued execution by the commit that
promotes it, and given back by the commit that ends the execution. A given-back slot is kept
a minute with the instant it was given back: a new start stamped before that instant (its
events were built before the end was committed) did not have room then, and is refused or
queued, so the histories never show more than ``limit`` running at one instant.
Nothing of this lives in a server's memory, so the limit holds however many servers share
the database; an execution taken over after its server died keeps its slot and gives it back
when it ends there.
"""

from __future__ import annotations

from typing import Literal

from .base import TERMINAL_STATUSES, Admission, Commit

SlotState = Literal["running", "queued", "free"]


FREED_KEPT_MS = 60_000  # how long a given-back slot is kept to answer "was it taken at t?"


def admits(admission: Admission, running: int, queued: int, freed_after: int = 0) -> bool:
    """True when ``admission`` may take a slot of a key with ``running`` executions running,
    ``queued`` waiting and ``freed_after`` given back after ``admission.at_ms`` (a new start
    never passes one that waits; a promotion is one of them)."""
    if admission.over_limit:
        return True
    if running + freed_after >= admission.limit:
        return False
    return admission.promoting or queued == 0


def freed_at(commit: Commit) -> int:
    """The instant ``commit`` gives its execution's slot back: when the execution closed."""
    row = commit.row
    if row.closed_at_ms is not None:
        return row.closed_at_ms
    return commit.events[-1].timestamp_ms if commit.events else 0


def claimed_at(admission: Admission) -> int:
    """The instant before which no given-back slot counts against ``admission`` (a promotion
    is stamped after the slot it takes was given back, so none does)."""
    if admission.at_ms is None or admission.promoting:
        return 1 << 62
    return admission.at_ms


def slot_change(commit: Commit) -> SlotState | None:
    """What ``commit`` does to its execution's slot (None: nothing; most commits)."""
    row = commit.row
    if row.flow_key is None:
        return None
    if row.status in TERMINAL_STATUSES:
        return "free"
    if row.status == "queued":
        return "queued"
    if commit.create or commit.admit is not None:
        return "running"
    return None
