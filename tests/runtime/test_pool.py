"""The worker pool is the one owner of tokens and capacity: whatever happens, every token is held
by exactly one session or by none, no session holds more than its capacity, a session that ends
hands back every token it held, and no ready unit is lost."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orbit_actors.actors.pool import Offer, WorkerPool
from orbit_actors.decide.invocation import TaskInvocation
from orbit_actors.wire import messages as wire
from orbit_actors.wire.server_fields import TaskFields


def unit(key: str) -> TaskInvocation:
    return TaskInvocation(key, "t", "1", None, {}, f"e/1/{key}", 1, False, None)


def task(token: str, key: str = "k") -> TaskFields:
    return wire.Task(
        type="task", token=token, execution_id="e", workflow="wf", workflow_version="1.0.0",
        step_id=key, task_name="t", contract_version="1", input={}, idempotency_key=key,
        attempt=1, redelivery=False, deadline_ms=None, timeout_ms=None,
    ).as_fields()  # fmt: skip


class Model:
    """A pool under test and what it must hold, kept by the test itself."""

    def __init__(self) -> None:
        self.offers: list[Offer] = []
        self.pool = WorkerPool(self._offer)
        self.sent: dict[str, list[wire.ServerMessage]] = {}
        self.capacity: dict[str, int] = {}
        self.holds: dict[str, str] = {}  # token -> session (not cancelled)
        self.cancelled: dict[str, str] = {}  # token -> session
        self.connected: set[str] = set()
        self.enqueued = 0
        self.tokens = 0

    def _offer(self, offer: Offer) -> str:
        self.offers.append(offer)
        token = self._token()
        self._reserved(token, offer.session_id)
        return token

    def _reserved(self, token: str, session: str) -> None:
        """Only a connected session with room gets a new token."""
        active = sum(1 for s in self.holds.values() if s == session)
        assert session in self.connected and active < self.capacity[session]
        self.holds[token] = session

    def _token(self) -> str:
        self.tokens += 1
        return f"tok-{self.tokens}"

    def connect(self, session: str, capacity: int) -> None:
        self.capacity[session] = capacity
        self.connected.add(session)
        self.pool.connect(session, f"w-{session}", "python", [("t", "1")], capacity,
                          self.sent.setdefault(session, []).append)  # fmt: skip

    def step(self, op: str, session: str, pick: int) -> None:
        held = sorted(self.holds)
        token = held[pick % len(held)] if held else None
        if op == "connect":
            self.connect(session, pick % 4)
        elif op == "disconnect":
            self.connected.discard(session)
            self.pool.disconnect(session)
        elif op == "enqueue":
            self.enqueued += 1
            self.pool.enqueue("e", unit(f"u{self.enqueued}"))
        elif op == "claim":
            new = self._token()
            match = self.pool.claim(unit("c"), new, 0)
            if match is not None:
                self._reserved(new, match[0])
        elif op == "push" and token is not None:
            self.pool.push(task(token), 1)
        elif op == "settle" and token is not None:
            del self.holds[token]
            self.pool.settle(token)
        elif op == "release" and token is not None:
            del self.holds[token]
            self.pool.release(token)
        elif op == "cancel" and token is not None:
            self.cancelled[token] = self.holds.pop(token)
            self.pool.cancel({token: "stop"})
        elif op == "end":
            handed = {held.token for held in self.pool.end(session)}
            assert handed == {t for t, s in self.holds.items() if s == session}
            self.holds = {t: s for t, s in self.holds.items() if s != session}
            self.cancelled = {t: s for t, s in self.cancelled.items() if s != session}
            self.capacity.pop(session, None)
            self.connected.discard(session)

    def check(self) -> None:
        for token, session in self.holds.items():
            assert self.pool.holder(token) == session
        for session in self.capacity:
            active = sum(1 for s in self.holds.values() if s == session)
            cancelled = sum(1 for s in self.cancelled.values() if s == session)
            assert self.pool.inflight(session) == active + cancelled
        queued = sum(self.pool.statistics().values())
        assert queued + len(self.offers) == self.enqueued  # each ready unit offered or waiting


OPS = st.sampled_from(
    ["connect", "disconnect", "enqueue", "claim", "push", "settle", "release", "cancel", "end"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(OPS, st.sampled_from(["s1", "s2"]), st.integers(0, 50)), max_size=60))
def test_every_token_has_one_holder_and_no_session_is_given_more_than_its_capacity(
    steps: list[tuple[str, str, int]],
) -> None:
    model = Model()
    for op, session, pick in steps:
        model.step(op, session, pick)
        model.check()


def test_a_reserved_token_goes_back_with_its_ended_session_and_is_never_pushed() -> None:
    model = Model()
    model.connect("s1", 1)
    assert model.pool.claim(unit("a"), "tok-a", 5) == ("s1", "w-s1")
    [held] = model.pool.end("s1")  # the session ended while the dispatch was being committed
    assert (held.token, held.task) == ("tok-a", None)
    model.pool.push(task("tok-a"), 6)
    assert model.sent["s1"] == []


def test_a_disconnected_session_keeps_its_tasks_for_a_resume_and_takes_no_new_work() -> None:
    model = Model()
    model.connect("s1", 2)
    model.pool.claim(unit("a"), "tok-a", 0)
    model.pool.disconnect("s1")
    model.pool.push(task("tok-a"), 1)  # committed while the connection was gone
    assert model.sent["s1"] == []
    assert model.pool.claim(unit("b"), "tok-b", 1) is None
    assert [t["token"] for t in model.pool.pushed("s1")] == ["tok-a"]
    model.connect("s1", 2)
    assert model.pool.claim(unit("b"), "tok-b", 2) == ("s1", "w-s1")


def test_a_settled_token_can_be_restored_while_its_session_lives() -> None:
    model = Model()
    model.connect("s1", 1)
    model.pool.claim(unit("a"), "tok-a", 0)
    held = model.pool.settle("tok-a")
    assert held is not None and model.pool.inflight("s1") == 0
    assert model.pool.restore(held) is True
    assert model.pool.holder("tok-a") == "s1" and model.pool.claim(unit("b"), "x", 0) is None
    model.pool.settle("tok-a")
    model.pool.end("s1")
    assert model.pool.restore(held) is False


def test_a_withdrawn_unit_no_longer_waits_and_is_skipped_when_its_turn_comes() -> None:
    offers: list[Offer] = []

    def offer(made: Offer) -> str:
        offers.append(made)
        return f"tok-{len(offers)}"

    pool = WorkerPool(offer)
    pool.enqueue("e", unit("late"))
    pool.enqueue("e", unit("next"))
    pool.withdraw("e", unit("late"))
    pool.withdraw("e", unit("late"))  # twice is once
    assert pool.loads()[("t", "1")].waiting == 1 and pool.statistics() == {"t@1": 1}
    pool.connect("s1", "w1", "python", [("t", "1")], 5, lambda message: None)
    assert [offer.key for offer in offers] == ["next"]
    assert pool.statistics() == {"t@1": 0}


def test_a_respawned_actor_adopting_a_token_reserved_and_never_pushed_pushes_it_once() -> None:
    # the actor crashed between its dispatch's commit and the push: the slot is still reserved
    sent: list[wire.ServerMessage] = []
    pool = WorkerPool(lambda offer: None)
    pool.connect("s1", "w1", "python", [("t", "1")], 2, sent.append)
    assert pool.claim(unit("a"), "tok-a") == ("s1", "w1")
    assert pool.claim(unit("b"), "tok-b") == ("s1", "w1")
    pool.push(task("tok-b", "b"), 0)
    pool.adopt("s1", "w1", task("tok-a", "a"), 0)  # reserved only: pushed now
    pool.adopt("s1", "w1", task("tok-b", "b"), 0)  # pushed already: not sent again
    pool.adopt("s1", "w1", task("tok-a", "a"), 0)  # pushed now: not sent again
    assert [(m.token, m.resent) for m in sent if isinstance(m, wire.Task)] == [
        ("tok-b", False), ("tok-a", False),
    ]  # fmt: skip
    assert sorted(t["token"] for t in pool.pushed("s1")) == ["tok-a", "tok-b"]
