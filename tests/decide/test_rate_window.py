"""The arithmetic of a rate limit (``decide/rate_window.py``): whatever order dispatches are
asked for in — instants out of order too, as from servers whose clocks differ — no span of
``per`` ever holds more than ``limit`` taken; a dispatch asked for when the window opens is
taken; and a refusal changes nothing."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orbit_actors.decide.rate_window import opens_at, take
from tests.rate_spans import most_in_any_span

limits = st.integers(min_value=1, max_value=6)
pers = st.integers(min_value=10, max_value=2_000)
asks = st.lists(st.integers(min_value=0, max_value=10_000), max_size=120)


@given(limits, pers, asks)
def test_no_span_of_per_ever_holds_more_than_limit(limit: int, per: int, at: list[int]) -> None:
    taken: list[int] = []
    for now in at:
        take(taken, limit, per, now)
    assert most_in_any_span(taken, per) <= limit


@given(limits, pers, st.lists(st.integers(min_value=0, max_value=50), max_size=80))
def test_asked_in_order_a_dispatch_goes_out_as_soon_as_the_window_opens(
    limit: int, per: int, gaps: list[int]
) -> None:
    taken: list[int] = []
    now = 0
    for gap in gaps:
        now += gap
        opens = take(taken, limit, per, now)
        if opens is not None:
            assert opens > now
            assert take(taken, limit, per, opens) is None  # taken the moment it opens
            now = opens
    assert most_in_any_span(taken, per) <= limit


@given(limits, pers, asks, st.integers(min_value=0, max_value=10_000))
def test_a_refusal_changes_nothing(limit: int, per: int, at: list[int], now: int) -> None:
    taken: list[int] = []
    for instant in at:
        take(taken, limit, per, instant)
    before = list(taken)
    opens = take(taken, limit, per, now)
    if opens is None:
        assert sorted([*before, now]) == taken
    else:
        assert taken == before
        assert opens == opens_at(before, limit, per, now) > now


def test_the_window_slides_rather_than_resets() -> None:
    taken: list[int] = []
    for now in (900, 950):  # two at the end of one second...
        assert take(taken, 2, 1000, now) is None
    assert take(taken, 2, 1000, 1000) == 1900  # ...are not forgotten when the next begins
    assert take(taken, 2, 1000, 1900) is None


def test_an_instant_ahead_of_this_clock_counts() -> None:
    taken = [5_000]  # another server, its clock a second ahead
    assert take(taken, 1, 1000, 4_100) == 6_000
