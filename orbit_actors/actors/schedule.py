"""A schedule's fields as a caller gives them, and the rules they must follow."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidScheduleError
from ..store.base import ScheduleRecord
from .cron import CronRule

OVERLAP_POLICIES = ("skip", "allow")
# An occurrence id adds ":YYYYMMDDTHHMMSSZ" (17 characters) and must stay a valid execution id.
SCHEDULE_ID = re.compile(r"[A-Za-z0-9\-_.]{1,183}")


@dataclass(frozen=True)
class ScheduleSpec:
    """A schedule's fields as a caller gives them (``paused`` apart, which changes)."""

    schedule_id: str
    cron: str
    workflow: str
    timezone: str = "UTC"
    version: str | None = None
    input: Any = field(default_factory=dict)
    overlap: str = "skip"

    def rule(self) -> CronRule:
        """Check the schedule's own fields; raises InvalidScheduleError naming the field."""
        if not SCHEDULE_ID.fullmatch(self.schedule_id):
            raise InvalidScheduleError(
                "schedule_id: use 1 to 183 letters, digits and - _ . "
                f"(got {self.schedule_id[:200]!r})"
            )
        if self.overlap not in OVERLAP_POLICIES:
            raise InvalidScheduleError(f"overlap: must be skip or allow (got {self.overlap!r})")
        return CronRule.parse(self.cron, self.timezone)

    def stored(self) -> dict[str, Any]:
        """The fields the store keeps and compares (a re-create with the same ones is a no-op)."""
        return {
            "cron": self.cron, "timezone": self.timezone, "workflow": self.workflow,
            "version": self.version, "input": self.input, "overlap": self.overlap,
        }  # fmt: skip

    @classmethod
    def of(cls, record: ScheduleRecord) -> ScheduleSpec:
        """The spec of a stored schedule."""
        return cls(schedule_id=record.schedule_id, **record.spec)
