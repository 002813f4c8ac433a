"""Rules every store enforces, whatever its engine: one execution's events continue its current
run with no seq gap; a rollover starts the next run at seq 1; a worker's last-seen time is
written at most once a second."""

from __future__ import annotations

from dataclasses import replace

from ..errors import StorageError
from .base import Commit, WorkerRecord


def check_commit(current: tuple[int, int] | None, commit: Commit) -> None:
    """Raise StorageError unless ``commit`` may follow ``current`` = (run, last_seq), or None
    for an execution not stored yet."""
    row = commit.row
    run, last_seq = current if current is not None else (row.run, 0)
    if commit.rollover:
        if current is None or run != row.run - 1:
            raise StorageError(
                f"execution `{row.execution_id}` cannot roll over to run {row.run}: "
                f"it is in run {run}"
            )
        last_seq = 0
    elif run != row.run:
        raise StorageError(f"execution `{row.execution_id}` is in run {run}, not {row.run}")
    expected = last_seq + 1
    for event in commit.events:
        if event.seq != expected:
            raise StorageError(
                f"execution `{row.execution_id}` has seq {last_seq}; "
                f"event {expected - last_seq} of the commit has seq {event.seq}"
            )
        expected += 1


TOUCH_INTERVAL_MS = 1000


class WorkerTouches:
    """When each worker's last-seen time was last written, so that a store writes it at most
    once per :data:`TOUCH_INTERVAL_MS` per worker."""

    def __init__(self) -> None:
        self._written: dict[str, int] = {}

    def registered(self, worker_id: str, now_ms: int) -> None:
        """A registration wrote the worker's time."""
        self._written[worker_id] = now_ms

    def due(self, worker_id: str, now_ms: int) -> bool:
        """True (and noted as written) when the time seen at ``now_ms`` should be written."""
        if now_ms - self._written.get(worker_id, -TOUCH_INTERVAL_MS) < TOUCH_INTERVAL_MS:
            return False
        self._written[worker_id] = now_ms
        return True

    def latest(self, record: WorkerRecord) -> WorkerRecord:
        """``record`` as read, seen last when this store last noted it, if that is later."""
        noted = self._written.get(record.worker_id, record.last_seen_ms)
        return record if noted <= record.last_seen_ms else replace(record, last_seen_ms=noted)
