"""Concurrency slots: which executions of each concurrency key run or wait, kept by the store in
the same transaction as the commits that start, queue and end them.

A slot is taken by the commit that starts an execution (its ``admit`` is checked against the
slots already taken, in that transaction), handed to a queued execution by the commit that
promotes it, and given back by the commit that ends the execution. Nothing of this lives in a
server's memory, so the limit holds however many servers share the database; an execution
taken over after its server died keeps its slot and gives it back when it ends there.
"""

from __future__ import annotations

from typing import Literal

from .base import TERMINAL_STATUSES, Admission, Commit

SlotState = Literal["running", "queued", "free"]


def admits(admission: Admission, running: int, queued: int) -> bool:
    """True when ``admission`` may take a slot of a key with ``running`` executions running and
    ``queued`` waiting (a new start never passes one that waits; a promotion is one of them)."""
    if admission.over_limit:
        return True
    if running >= admission.limit:
        return False
    return admission.promoting or queued == 0


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
