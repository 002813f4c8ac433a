"""The pool's part in the task queue several servers share: a unit that must wait is offered
to the other servers, withdrawn once handed here, and a session with room and nothing here to
do asks for shared work; a claimed unit is offered as remote."""

from __future__ import annotations

from orbit_actors.actors.pool import Offer, QueueKey, WorkerPool
from orbit_actors.decide.invocation import TaskInvocation


def unit(key: str) -> TaskInvocation:
    return TaskInvocation(key, "t", "1", None, {}, f"e/1/{key}", 1, False, None)


class Recorder:
    """Stands for the shared queue: what the pool told it."""

    def __init__(self) -> None:
        self.shared: list[str] = []
        self.withdrawn: list[str] = []
        self.asked = 0

    def spilled(self, execution_id: str, key: str, attempt: int, queue: QueueKey) -> None:
        self.shared.append(key)

    def handed(self, execution_id: str, key: str, attempt: int) -> None:
        self.withdrawn.append(key)

    def hungry(self) -> None:
        self.asked += 1


def pool_with(sharing: Recorder) -> tuple[WorkerPool, list[Offer]]:
    offers: list[Offer] = []

    def offer(made: Offer) -> str:
        offers.append(made)
        return f"{len(offers)}@{made.execution_id}"

    return WorkerPool(offer, sharing), offers


def test_a_unit_that_waits_is_shared_and_withdrawn_once_handed_here() -> None:
    sharing = Recorder()
    pool, offers = pool_with(sharing)
    pool.enqueue("e", unit("a"))  # no session yet: it waits, and is shared
    assert sharing.shared == ["a"]
    pool.connect("s1", "w", "python", [("t", "1")], 1, lambda message: None)
    assert [o.key for o in offers] == ["a"] and not offers[0].remote
    assert sharing.withdrawn == ["a"]


def test_a_unit_handed_at_once_is_never_shared() -> None:
    sharing = Recorder()
    pool, offers = pool_with(sharing)
    pool.connect("s1", "w", "python", [("t", "1")], 2, lambda message: None)
    pool.enqueue("e", unit("a"))
    assert sharing.shared == [] and [o.key for o in offers] == ["a"]


def test_a_session_with_room_asks_for_shared_work_and_gets_it_as_remote() -> None:
    sharing = Recorder()
    pool, offers = pool_with(sharing)
    pool.connect("s1", "w", "python", [("t", "1")], 2, lambda message: None)
    assert sharing.asked >= 1
    assert pool.hunger() == {("t", "1", None): 2, ("t", "1", "python"): 2}
    pool.enqueue_remote("elsewhere", "b", 1, ("t", "1", None))
    assert offers[-1].remote and offers[-1].execution_id == "elsewhere"
    assert pool.hunger() == {("t", "1", None): 1, ("t", "1", "python"): 1}
