"""Building commits for store tests."""

from __future__ import annotations

from orbit_actors.history.events import Event, SignalReceived
from orbit_actors.store import Commit, ExecutionRow


def row(
    execution_id: str,
    *,
    status: str = "running",
    run: int = 1,
    workflow: str = "wf",
    parent_id: str | None = None,
    wake_at_ms: int | None = None,
    busy: bool = True,
) -> ExecutionRow:
    """A summary row."""
    return ExecutionRow(
        execution_id=execution_id, workflow=workflow, version="1.0.0", definition_hash="h" * 64,
        status=status, run=run, started_at_ms=1000, parent_id=parent_id,
        closed_at_ms=None if status == "running" else 2000, wake_at_ms=wake_at_ms, busy=busy,
    )  # fmt: skip


def events(first_seq: int, count: int = 3, pad: int = 250) -> list[Event]:
    """``count`` events numbered from ``first_seq`` (about ``pad`` bytes each)."""
    return [
        SignalReceived(
            seq=first_seq + i,
            timestamp_ms=1000 + i,
            name="s",
            payload={"pad": "x" * pad, "n": first_seq + i},
        )
        for i in range(count)
    ]


def commit(
    execution_id: str,
    first_seq: int,
    count: int = 3,
    *,
    pad: int = 250,
    rollover: bool = False,
    **kwargs: object,
) -> Commit:
    """A commit of ``count`` events for ``execution_id``."""
    return Commit(row(execution_id, **kwargs), events(first_seq, count, pad), rollover=rollover)  # type: ignore[arg-type]
