"""When a server renews its lease and looks for dead servers (supervisor/membership.py): after
every renewal, and also as soon as another member's lease ends, so a dead server is taken over
at its lease's end rather than up to a third of a lease later. A fake cluster and MockClock."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from orbit_actors.errors import StorageError
from orbit_actors.store.cluster import Takeover
from orbit_actors.supervisor.membership import EXPIRY_MARGIN_S, keep_membership

LEASE_S = 3.0  # renewals every second


class FakeCluster:
    """Records when it was renewed and taken over; each takeover answers the next of
    ``expiries`` (ms until another member's lease ends; None: no other member)."""

    server_id, epoch, lease_s = "me", 1, LEASE_S

    def __init__(
        self, expiries: list[int | None], renew_fails_at: frozenset[int] = frozenset()
    ) -> None:
        self.expiries = expiries
        self.renew_fails_at = renew_fails_at
        self.renewals: list[float] = []
        self.takeovers: list[float] = []

    async def renew(self) -> None:
        self.renewals.append(trio.current_time())
        if len(self.renewals) in self.renew_fails_at:
            raise StorageError("the database is away")

    async def take_over(self, *, orphans: bool = False) -> Takeover:
        self.takeovers.append(trio.current_time())
        expiry = self.expiries.pop(0) if self.expiries else None
        return Takeover(next_expiry_ms=expiry)


async def run_for(cluster: FakeCluster, seconds: float) -> None:
    with trio.move_on_after(seconds):
        async with trio.open_nursery() as nursery:
            await nursery.start(keep_membership, cluster, lambda taken: None)


async def test_a_lease_ending_before_the_next_renewal_is_looked_at_when_it_ends(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cluster = FakeCluster([400, None])
    await run_for(cluster, 0.9)
    assert cluster.takeovers == pytest.approx([0.0, 0.4 + EXPIRY_MARGIN_S])
    assert cluster.renewals == []


async def test_with_no_other_member_takeovers_follow_renewals_only(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cluster = FakeCluster([])
    await run_for(cluster, 3.5)
    assert cluster.renewals == pytest.approx([1.0, 2.0, 3.0])
    assert cluster.takeovers == pytest.approx([0.0, 1.0, 2.0, 3.0])


async def test_a_lease_ending_after_the_next_renewal_waits_for_that_renewal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cluster = FakeCluster([2500, None])  # a live member renews long before then
    await run_for(cluster, 1.5)
    assert cluster.takeovers == pytest.approx([0.0, 1.0])


async def test_no_takeover_until_a_renewal_succeeds_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cluster = FakeCluster([1500, 100, None], renew_fails_at=frozenset({1}))
    await run_for(cluster, 2.5)
    assert cluster.renewals == pytest.approx([1.0, 2.0])
    assert cluster.takeovers == pytest.approx([0.0, 2.0, 2.1 + EXPIRY_MARGIN_S])


async def test_a_lease_already_ended_is_looked_at_again_just_past_its_end(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cluster = FakeCluster([-50, None])  # ended between the takeover's two statements
    await run_for(cluster, 0.5)
    assert cluster.takeovers == pytest.approx([0.0, EXPIRY_MARGIN_S])
