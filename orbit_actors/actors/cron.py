"""When a cron schedule fires: 5-field cron or an ``@hourly``-style macro (parsed by ``cronsim``)
read in an IANA time zone (``zoneinfo``), as epoch milliseconds.

cronsim walks naive local wall times; this module maps each to one instant:
- a wall time that does not exist (the hour skipped when clocks spring forward) is skipped;
- a wall time that occurs twice (the hour repeated when clocks fall back) is the first of the two.
With those two rules a wall time maps to at most one instant and later wall times to later
instants, so an occurrence fires at most once and in order, whatever the clocks do.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from ..errors import InvalidScheduleError

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# Wall clocks move by at most two hours at a transition: starting a walk this far to the side
# of an instant's own wall time is sure to meet every occurrence near it.
_SLACK = timedelta(hours=2)
# A cron whose every match is a skipped wall time would walk forever; a walk gives up after this
# many candidates (cronsim itself stops 50 years ahead).
_MAX_CANDIDATES = 10_000


def _instant_ms(wall: datetime, zone: ZoneInfo) -> int | None:
    """The instant of a naive wall time in ``zone`` (the first of two), or None if it never
    happens there."""
    instant = wall.replace(tzinfo=zone, fold=0)
    back = instant.astimezone(UTC).astimezone(zone).replace(tzinfo=None)
    if back != wall:
        return None
    return int(instant.timestamp() * 1000)


def _wall(ms: int, zone: ZoneInfo) -> datetime:
    return datetime.fromtimestamp(ms / 1000, zone).replace(tzinfo=None)


@dataclass(frozen=True)
class CronRule:
    """A parsed cron expression in a time zone."""

    expression: str
    timezone: str
    _zone: ZoneInfo

    @classmethod
    def parse(cls, cron: str, timezone: str = "UTC") -> CronRule:
        """The rule of ``cron`` in ``timezone``; raises InvalidScheduleError naming the field."""
        expression = MACROS.get(cron.strip().lower(), cron.strip())
        try:
            zone = ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise InvalidScheduleError(
                f"timezone: unknown time zone `{timezone}`; use an IANA name such as "
                "Europe/Berlin or UTC"
            ) from None
        try:
            CronSim(expression, datetime(2000, 1, 1))
        except CronSimError as exc:
            raise InvalidScheduleError(
                f"cron: `{cron}` is not a valid cron expression ({exc}); use 5 fields "
                "(minute hour day-of-month month day-of-week) or @yearly, @monthly, @weekly, "
                "@daily, @hourly"
            ) from None
        return cls(expression, timezone, zone)

    def _walk(self, start: datetime, *, reverse: bool = False) -> Iterator[int]:
        """Instants of the matching wall times from ``start`` (exclusive), skipped ones left out."""
        walk = CronSim(self.expression, start, reverse=reverse)
        for _, wall in zip(range(_MAX_CANDIDATES), walk, strict=False):
            instant = _instant_ms(wall, self._zone)
            if instant is not None:
                yield instant

    def next_after(self, after_ms: int) -> int | None:
        """The first occurrence strictly after ``after_ms`` (None if there is none)."""
        start = _wall(after_ms, self._zone) - _SLACK
        return next((ms for ms in self._walk(start) if ms > after_ms), None)

    def latest_at_or_before(self, now_ms: int) -> int | None:
        """The last occurrence at or before ``now_ms`` (None if there is none)."""
        start = _wall(now_ms, self._zone) + _SLACK
        return next((ms for ms in self._walk(start, reverse=True) if ms <= now_ms), None)

    def due(self, settled_ms: int, now_ms: int) -> int | None:
        """The occurrence to fire next when those up to ``settled_ms`` are done: the latest one
        missed in ``(settled_ms, now_ms]`` (only that one: missed runs are not replayed one by
        one), otherwise the first after ``now_ms``."""
        missed = self.latest_at_or_before(now_ms)
        if missed is not None and missed > settled_ms:
            return missed
        return self.next_after(max(settled_ms, now_ms))

    def upcoming(self, after_ms: int, count: int) -> list[int]:
        """The next ``count`` occurrences after ``after_ms``."""
        out: list[int] = []
        cursor: int | None = after_ms
        while len(out) < count and cursor is not None:
            cursor = self.next_after(cursor)
            if cursor is not None:
                out.append(cursor)
        return out


def occurrence_id(schedule_id: str, occurrence_ms: int) -> str:
    """The execution id of an occurrence: ``<schedule_id>:<YYYYMMDDTHHMMSSZ>`` in UTC."""
    moment = datetime.fromtimestamp(occurrence_ms / 1000, UTC)
    return f"{schedule_id}:{moment.strftime('%Y%m%dT%H%M%SZ')}"
