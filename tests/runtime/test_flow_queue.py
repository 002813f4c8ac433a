"""The dispatcher's order under flow control, checked against a model: the next unit is always of
the highest priority waiting (1 first); within it, concurrency keys take turns (no key is served
twice while another key of that priority waited the whole time); within a key, oldest first; and
the pool hands units to sessions in that order."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from orbit_actors.actors.flow_queue import FlowQueue, rank
from orbit_actors.actors.pool import Offer, WorkerPool
from orbit_actors.decide.invocation import TaskInvocation
from orbit_actors.history.events import StartFlow


@dataclass(eq=False)
class Item:
    order: int
    flow_key: str | None
    arrival: int
    priority: int


@dataclass
class Model:
    waiting: list[Item] = field(default_factory=list)
    served: list[tuple[int, str | None]] = field(default_factory=list)  # (priority, key) per pop
    last_turn: dict[tuple[int, str | None], tuple[int, set[str | None]]] = field(
        default_factory=dict
    )  # (priority, key) → (its latest pop, the keys of its priority waiting right after)


class DispatchOrder(RuleBasedStateMachine):
    """Units come and go in any interleaving; each pop is checked against the model."""

    def __init__(self) -> None:
        super().__init__()
        self.queue: FlowQueue[Item] = FlowQueue()
        self.model = Model()
        self.arrivals = 0

    @rule(priority=st.integers(1, 9), key=st.sampled_from([None, "a", "b", "c", "d"]))
    def arrive(self, priority: int, key: str | None) -> None:
        self.arrivals += 1
        item = Item(rank(priority, self.arrivals), key, self.arrivals, priority)
        self.queue.append(item)
        self.model.waiting.append(item)

    @precondition(lambda self: bool(self.model.waiting))
    @rule()
    def dispatch(self) -> None:
        head = self.queue[0]
        item = self.queue.popleft()
        assert item is head
        waiting = self.model.waiting
        assert item.priority == min(i.priority for i in waiting)
        same_key = [
            i for i in waiting if i.priority == item.priority and i.flow_key == item.flow_key
        ]
        assert item.arrival == min(i.arrival for i in same_key)  # oldest of its key
        # round robin: between two turns of one key, every other key of that priority that
        # waited at the first turn has had its own
        mine = (item.priority, item.flow_key)
        before = self.model.last_turn.get(mine)
        if before is not None:
            step, keys_then = before
            served = {k for p, k in self.model.served[step + 1 :] if p == item.priority}
            assert not (keys_then - {item.flow_key} - served), (item, keys_then, served)
        waiting.remove(item)
        self.model.served.append(mine)
        keys_now = {i.flow_key for i in waiting if i.priority == item.priority}
        self.model.last_turn[mine] = (len(self.model.served) - 1, keys_now)

    @invariant()
    def sizes_agree(self) -> None:
        assert len(self.queue) == len(self.model.waiting)
        assert bool(self.queue) == bool(self.model.waiting)


DispatchOrder.TestCase.settings = settings(max_examples=200, stateful_step_count=60, deadline=None)
TestDispatchOrder = DispatchOrder.TestCase


def test_keys_of_one_priority_take_turns_oldest_first() -> None:
    queue: FlowQueue[Item] = FlowQueue()
    for n, key in enumerate(["a", "a", "a", "b", "c", "b"], start=1):
        queue.append(Item(rank(5, n), key, n, 5))
    served = [(item.flow_key, item.arrival) for item in (queue.popleft() for _ in range(6))]
    assert served == [("a", 1), ("b", 4), ("c", 5), ("a", 2), ("b", 6), ("a", 3)]


def test_a_plain_queue_becomes_a_flow_queue_keeping_its_order() -> None:
    plain = deque(Item(rank(5, n), None, n, 5) for n in range(3))
    queue = FlowQueue(plain)
    queue.append(Item(rank(1, 9), "vip", 9, 1))
    assert [queue.popleft().arrival for _ in range(4)] == [9, 0, 1, 2]


def invocation(n: int, priority: int | None, key: str | None = None) -> TaskInvocation:
    flow = None if priority is None else StartFlow(priority=priority, key=key)
    return TaskInvocation(f"u{n}", "t", "1", None, {}, f"i{n}", 1, False, None, flow)


def test_the_pool_hands_waiting_units_by_priority_then_key_then_age() -> None:
    offered: list[str] = []

    def offer(found: Offer) -> str:
        offered.append(found.execution_id)
        return f"token-{len(offered)}"

    pool = WorkerPool(offer)
    pool.enqueue("plain-1", invocation(1, None))
    pool.enqueue("low", invocation(2, 9, "x"))
    pool.enqueue("a-1", invocation(3, 2, "a"))
    pool.enqueue("a-2", invocation(4, 2, "a"))
    pool.enqueue("b-1", invocation(5, 2, "b"))
    pool.enqueue("plain-2", invocation(6, None))
    pool.connect("s", "w", "python", [("t", "1")], 6, lambda message: None)
    assert offered == ["a-1", "b-1", "a-2", "plain-1", "plain-2", "low"]
