"""When a cron rule fires: macros, time zones, the two DST rules (a skipped wall time does not fire,
a repeated one fires once, at the first) and what fires after downtime."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbit_actors.actors.cron import CronRule, occurrence_id
from orbit_actors.errors import InvalidScheduleError

BERLIN = ZoneInfo("Europe/Berlin")


def ms(text: str) -> int:
    """Epoch ms of an ISO time (UTC unless it carries an offset)."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def iso(value: int) -> str:
    return datetime.fromtimestamp(value / 1000, UTC).strftime("%Y-%m-%dT%H:%M")


def test_a_daily_time_skipped_by_spring_forward_does_not_fire_that_day() -> None:
    rule = CronRule.parse("30 2 * * *", "Europe/Berlin")
    fired = [iso(x) for x in rule.upcoming(ms("2026-03-27T12:00"), 3)]
    # 02:30 on 29 March does not exist in Berlin (02:00 CET jumps to 03:00 CEST)
    assert fired == ["2026-03-28T01:30", "2026-03-30T00:30", "2026-03-31T00:30"]


def test_a_wall_time_repeated_by_fall_back_fires_once_at_the_first() -> None:
    rule = CronRule.parse("*/30 2 * * *", "Europe/Berlin")
    fired = [iso(x) for x in rule.upcoming(ms("2026-10-24T12:00"), 4)]
    # 02:00 and 02:30 happen twice on 25 October: first in CEST (00:00Z, 00:30Z), then in CET
    assert fired == ["2026-10-25T00:00", "2026-10-25T00:30", "2026-10-26T01:00", "2026-10-26T01:30"]


def test_an_hourly_rule_keeps_one_fire_per_real_hour_across_fall_back() -> None:
    rule = CronRule.parse("@hourly", "Europe/Berlin")
    fired = rule.upcoming(ms("2026-10-24T23:30"), 4)
    # wall 02:00 is fired once (at its first), so the real hour 01:00Z-02:00Z has no fire
    assert [iso(x) for x in fired] == [
        "2026-10-25T00:00", "2026-10-25T02:00", "2026-10-25T03:00", "2026-10-25T04:00",
    ]  # fmt: skip


def test_the_latest_occurrence_is_found_from_inside_the_repeated_hour() -> None:
    rule = CronRule.parse("45 2 * * *", "Europe/Berlin")
    now = ms("2026-10-25T02:10+01:00")  # 02:10 CET, the second pass
    assert iso(rule.latest_at_or_before(now) or 0) == "2026-10-25T00:45"  # 02:45 CEST


def test_after_downtime_only_the_latest_missed_occurrence_is_due() -> None:
    rule = CronRule.parse("@hourly")
    assert iso(rule.due(ms("2026-01-01T00:00"), ms("2026-01-01T05:30")) or 0) == "2026-01-01T05:00"
    assert iso(rule.due(ms("2026-01-01T05:00"), ms("2026-01-01T05:30")) or 0) == "2026-01-01T06:00"


@pytest.mark.parametrize(
    ("macro", "expression"),
    [("@yearly", "0 0 1 1 *"), ("@annually", "0 0 1 1 *"), ("@monthly", "0 0 1 * *"),
     ("@weekly", "0 0 * * 0"), ("@daily", "0 0 * * *"), ("@midnight", "0 0 * * *"),
     ("@hourly", "0 * * * *")],
)  # fmt: skip
def test_macros_are_their_five_field_expressions(macro: str, expression: str) -> None:
    start = ms("2026-05-17T13:14")
    assert CronRule.parse(macro).upcoming(start, 3) == CronRule.parse(expression).upcoming(start, 3)


@pytest.mark.parametrize(
    ("cron", "timezone", "field"),
    [("61 * * * *", "UTC", "cron"), ("* * * *", "UTC", "cron"), ("@sometimes", "UTC", "cron"),
     ("0 0 31 2 *", "UTC", "cron"), ("@hourly", "Mars/Olympus", "timezone"),
     ("@hourly", "", "timezone"), ("@hourly", "../../etc/passwd", "timezone")],
)  # fmt: skip
def test_a_malformed_rule_is_refused_naming_the_field(cron: str, timezone: str, field: str) -> None:
    with pytest.raises(InvalidScheduleError) as caught:
        CronRule.parse(cron, timezone)
    assert caught.value.message.startswith(f"{field}: ")


def test_an_occurrence_id_is_the_schedule_and_the_utc_second() -> None:
    assert occurrence_id("nightly", ms("2026-03-29T01:30:00")) == "nightly:20260329T013000Z"


@settings(max_examples=60, deadline=None)
@given(
    start=st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2035, 1, 1)),
    cron=st.sampled_from(["*/20 * * * *", "30 2 * * *", "0 1-3 * * *", "15 2 * * 0", "@hourly"]),
)
def test_occurrences_increase_fire_once_per_wall_time_and_walk_both_ways_alike(
    start: datetime, cron: str
) -> None:
    rule = CronRule.parse(cron, "Europe/Berlin")
    after = int(start.replace(tzinfo=UTC).timestamp() * 1000)
    fired = rule.upcoming(after, 6)
    assert fired == sorted(set(fired)) and fired[0] > after
    walls = {datetime.fromtimestamp(v / 1000, BERLIN).replace(tzinfo=None) for v in fired}
    assert len(walls) == len(fired)
    for previous, value in itertools.pairwise(fired):
        assert rule.latest_at_or_before(value) == value
        assert rule.latest_at_or_before(value - 1) == previous
