"""Rate limits kept by the store: the dispatch instants of each (task, key), counted and written
in the same transaction as the commit whose ``StepDispatched`` they count (``Commit.rates``).

A batch reads, for each (task, key) its commits charge, the instants recent enough to matter
(later than the earliest charge's instant minus ``per``: at most ``limit`` of them), then
checks its commits in order with :func:`~orbit_actors.decide.rate_window.take` — each commit
all or nothing, seeing the instants the commits before it in the batch took — and writes what
was taken. A commit over a limit is refused whole (:class:`RateLimited`, nothing written). On
SQLite the writer is the only one; on PostgreSQL the batch first locks each (task, key) it
charges, so servers charging the same key take turns and the count is exact across them.

Rows are kept until ``per`` plus :data:`SKEW_MARGIN_MS` after their instant (``expires_ms``):
a server whose clock runs behind another's by less than the margin still finds every instant
it must count. Expired rows are deleted a few at a time by the batches that charge.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..decide import rate_window
from .base import Commit, RateCharge, RateLimited

SKEW_MARGIN_MS = 1_000
"""How long past its window an instant is kept: the clock difference between servers that the
count tolerates."""
PRUNE_BATCH = 500
"""Expired rows one batch deletes at most (the rest go with the next batches), or twice what it
adds if more: the deleting keeps up with the adding."""

Window = tuple[str, str]  # (task, key)
LogRow = tuple[str, str, int, int]  # (task, key, at_ms, expires_ms)


def charged(commits: Iterable[Commit]) -> dict[Window, int]:
    """Each (task, key) the commits charge, with the instant after which its instants count
    (the earliest charge's ``at - per``)."""
    after: dict[Window, int] = {}
    for commit in commits:
        for charge in commit.rates:
            window = (charge.take.task, charge.take.key)
            bound = charge.at_ms - charge.take.per_ms
            after[window] = min(after.get(window, bound), bound)
    return after


def expires_at(charge: RateCharge) -> int:
    """When the row of ``charge`` may be deleted."""
    return charge.at_ms + charge.take.per_ms + SKEW_MARGIN_MS


class RateBook:
    """The instants of the windows a batch charges, as its transaction read them, and the rows
    its accepted commits add."""

    def __init__(self, found: dict[Window, list[int]]) -> None:
        self._instants = {window: sorted(at) for window, at in found.items()}
        self.added: list[LogRow] = []

    def charge(self, commit: Commit) -> RateLimited | None:
        """Take every charge of ``commit``, or none of them: the refusal of the first over its
        limit (the charges taken before it are given back)."""
        for done, charge in enumerate(commit.rates):
            rate = charge.take
            instants = self._instants.setdefault((rate.task, rate.key), [])
            opens = rate_window.take(instants, rate.limit, rate.per_ms, charge.at_ms)
            if opens is not None:
                self._give_back(commit.rates[:done])
                return RateLimited(rate.task, rate.key, opens)
            self.added.append((rate.task, rate.key, charge.at_ms, expires_at(charge)))
        return None

    def give_back(self, commit: Commit) -> None:
        """Undo :meth:`charge` of a commit refused for another reason afterwards."""
        self._give_back(commit.rates)

    def _give_back(self, charges: Iterable[RateCharge]) -> None:
        for charge in charges:
            rate = charge.take
            self._instants[(rate.task, rate.key)].remove(charge.at_ms)
            self.added.remove((rate.task, rate.key, charge.at_ms, expires_at(charge)))


def latest(commits: Iterable[Commit]) -> int:
    """The latest instant the commits charge (what expired rows are pruned against)."""
    return max(charge.at_ms for commit in commits for charge in commit.rates)
