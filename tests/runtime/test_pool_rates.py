"""What the pool knows of rate limits is a hint the store corrects: a charge the store refused
is given back, the window stays shut until the instant the store named, a unit the store refused
is held until then, and when its window opens it goes to a session here with room, or else is
queued and published for another server's worker; and what allows anything again is forgotten."""

from __future__ import annotations

from orbit_actors.actors.pool import Offer, WorkerPool
from orbit_actors.actors.rate_windows import FORGET_EVERY, RateWindows
from orbit_actors.decide.invocation import RateTake, TaskInvocation
from orbit_actors.store.base import RateCharge, RateLimited

from .test_pool_sharing import Recorder

TAKE = RateTake("t", "m", 2, 1000)


def rated(key: str) -> TaskInvocation:
    return TaskInvocation(key, "t", "1", None, {}, f"e/1/{key}", 1, False, None, rate=TAKE)


class Now:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> int:
        return self.ms


def pool_at(now: Now, sharing: Recorder | None = None) -> tuple[WorkerPool, list[Offer]]:
    offers: list[Offer] = []

    def offer(made: Offer) -> str:
        offers.append(made)
        return f"{len(offers)}@{made.execution_id}"

    return WorkerPool(offer, sharing, now_ms=now), offers


def test_a_refused_charge_is_given_back_and_the_window_stays_shut_until_the_store_said() -> None:
    now = Now()
    pool, _ = pool_at(now)
    assert pool.take_rate("e1", rated("a"), 0)
    pool.rates_not_taken([RateCharge(TAKE, 0)], RateLimited("t", "m", 800))
    now.ms = 500
    assert not pool.take_rate("e2", rated("a"), 500)  # held: the store said 800
    assert pool.rate_limited("e2", "a") == TAKE
    assert pool.rates.next_due_ms() == 800
    assert pool.take_rate("e3", rated("a"), 800)  # and the refused charge was given back:
    assert pool.take_rate("e4", rated("a"), 800)  # two fit in the window from 800


def test_a_held_unit_goes_to_a_session_here_when_its_window_opens() -> None:
    now = Now()
    pool, offers = pool_at(now)
    pool.connect("s1", "w", "python", [("t", "1")], 1, lambda message: None)
    pool.rates_not_taken([], RateLimited("t", "m", 800))
    pool.hold("e", rated("a"), 0)
    assert offers == []
    now.ms = 800
    pool.release_due(800)
    assert [(o.execution_id, o.key) for o in offers] == [("e", "a")]
    assert pool.rate_limited("e", "a") is None


def test_a_held_unit_with_no_session_here_is_published_when_its_window_opens() -> None:
    now, sharing = Now(), Recorder()
    pool, offers = pool_at(now, sharing)
    pool.rates_not_taken([], RateLimited("t", "m", 800))
    pool.hold("e", rated("a"), 0)
    assert sharing.shared == []  # not while its window is shut
    now.ms = 800
    pool.release_due(800)
    assert sharing.shared == ["a"] and offers == []
    pool.connect("s1", "w", "python", [("t", "1")], 1, lambda message: None)
    assert [o.key for o in offers] == ["a"] and sharing.withdrawn == ["a"]


def test_a_server_forgets_the_windows_that_allow_anything_again() -> None:
    windows: RateWindows[str] = RateWindows()
    windows.take(RateTake("t", "once", 1, 1000), 0)
    windows.close("t", "refused", 500)
    windows.take(RateTake("t", "slow", 1, 60_000), 0)
    for n in range(FORGET_EVERY):
        windows.take(RateTake("t", f"k{n}", 1, 1000), 5_000)
    assert windows.remembered() == FORGET_EVERY + 1  # `slow` is still in its minute
    assert not windows.allows(RateTake("t", "slow", 1, 60_000), 5_000)


def test_charges_of_a_commit_that_failed_for_another_reason_are_given_back() -> None:
    pool, _ = pool_at(Now())
    assert pool.take_rate("e1", rated("a"), 0)
    assert pool.take_rate("e2", rated("a"), 0)
    pool.rates_not_taken([RateCharge(TAKE, 0)])  # say, a start its concurrency key refused
    assert pool.take_rate("e3", rated("a"), 0)
    assert pool.rate_limited("e3", "a") is None
