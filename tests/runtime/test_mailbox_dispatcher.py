"""Mailboxes push back and never hang; the worker pool serves the oldest unit a session can take."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import trio
import trio.testing

from orbit_actors.actors.pool import Offer, WorkerPool
from orbit_actors.decide.invocation import TaskInvocation
from orbit_actors.errors import ActorGoneError, MailboxFullError
from orbit_actors.mailbox import Command, Mailbox, Reply


@dataclass(eq=False)
class Ping(Command):
    n: int = 0


async def test_a_full_mailbox_pushes_back() -> None:
    mailbox: Mailbox[Command] = Mailbox("actor", capacity=2)
    mailbox.send_nowait(Ping(1))
    mailbox.send_nowait(Ping(2))
    with pytest.raises(MailboxFullError):
        mailbox.send_nowait(Ping(3))
    with trio.move_on_after(0.1) as scope:
        await mailbox.send(Ping(3))  # waits while full
    assert scope.cancelled_caught


async def test_a_request_to_a_closed_mailbox_fails_at_once() -> None:
    mailbox: Mailbox[Command] = Mailbox("execution `x`")
    mailbox.close("finished")
    with (
        trio.fail_after(1),
        pytest.raises(ActorGoneError, match=r"the actor of execution `x` is gone \(finished\)"),
    ):
        await mailbox.request(Ping(reply=Reply()))


async def test_queued_requests_are_answered_when_the_mailbox_closes() -> None:
    mailbox: Mailbox[Command] = Mailbox("execution `x`")
    outcome: list[str] = []

    async def ask() -> None:
        try:
            await mailbox.request(Ping(reply=Reply()))
        except ActorGoneError as exc:
            outcome.append(exc.why)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        mailbox.close("quarantined")
    assert outcome == ["quarantined"]


pushed: list[object] = []  # what the pool sends sessions (these tests only look at offers)


def recorder(offers: list[Offer]) -> WorkerPool:
    """A pool whose offers are recorded; the n-th offer gets token ``tok-n``."""

    def offer(made: Offer) -> str:
        offers.append(made)
        return f"tok-{len(offers)}"

    return WorkerPool(offer)


def unit(key: str, task: str = "t", language: str | None = None) -> TaskInvocation:
    return TaskInvocation(key, task, "1", language, {}, f"e/1/{key}", 1, False, None)


def test_a_session_takes_the_oldest_unit_it_can_serve() -> None:
    offers: list[Offer] = []
    dispatcher = recorder(offers)
    dispatcher.enqueue("e1", unit("a", "t"))
    dispatcher.enqueue("e2", unit("b", "u"))
    dispatcher.enqueue("e3", unit("c", "t"))
    dispatcher.connect("s1", "w1", "python", [("t", "1"), ("u", "1")], 2, pushed.append)
    assert [(o.execution_id, o.key) for o in offers] == [("e1", "a"), ("e2", "b")]
    dispatcher.release("tok-1")
    assert [o.key for o in offers] == ["a", "b", "c"]


def test_language_routing_and_any() -> None:
    offers: list[Offer] = []
    dispatcher = recorder(offers)
    dispatcher.connect("py", "w-py", "python", [("t", "1")], 10, pushed.append)
    dispatcher.connect("go", "w-go", "go", [("t", "1")], 10, pushed.append)
    dispatcher.enqueue("e", unit("go-only", language="Go"))
    dispatcher.enqueue("e", unit("anyone", language="any"))
    assert {o.key: o.session_id for o in offers}["go-only"] == "go"
    assert "anyone" in {o.key for o in offers}


def test_a_stale_offer_gives_the_slot_back() -> None:
    offers: list[Offer] = []
    dispatcher = recorder(offers)
    dispatcher.connect("s1", "w1", "python", [("t", "1")], 1, pushed.append)
    dispatcher.enqueue("e1", unit("a"))
    dispatcher.enqueue("e2", unit("b"))
    assert [o.key for o in offers] == ["a"]
    dispatcher.release("tok-1")  # the actor refused "a" (stale)
    assert [o.key for o in offers] == ["a", "b"]


def test_claiming_respects_older_queued_units() -> None:
    dispatcher = WorkerPool(lambda offer: "tok")
    dispatcher.enqueue("e1", unit("old"))
    dispatcher.connect("s1", "w1", "python", [("u", "1")], 1, pushed.append)
    assert dispatcher.claim(unit("new"), "t2") is None  # nobody serves t
    dispatcher.connect("s2", "w2", "python", [("t", "1")], 2, pushed.append)
    assert dispatcher.claim(unit("new"), "t3") == ("s2", "w2")  # "old" went to s2 first


async def test_a_receiver_waiting_on_a_mailbox_that_closes_gets_actor_gone() -> None:
    mailbox: Mailbox[Command] = Mailbox("m", 4)
    async with trio.open_nursery() as nursery:
        failures: list[BaseException] = []

        async def receive() -> None:
            try:
                await mailbox.receive()
            except ActorGoneError as exc:
                failures.append(exc)

        nursery.start_soon(receive)
        await trio.testing.wait_all_tasks_blocked()
        mailbox.close("finished")
    assert len(failures) == 1


async def test_a_sender_waiting_on_a_full_mailbox_goes_on_when_a_command_is_taken() -> None:
    mailbox: Mailbox[Command] = Mailbox("m", 1)
    mailbox.send_nowait(Command())
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mailbox.send, Command())
        await trio.testing.wait_all_tasks_blocked()
        mailbox.receive_nowait()
    assert mailbox.receive_nowait() is not None


async def test_a_cancelled_reply_wait_leaves_the_reply_answerable() -> None:
    reply: Reply[int] = Reply()
    with trio.move_on_after(0.01):
        await reply.wait()
    reply.set(7)
    assert await reply.wait() == 7


def test_a_mailbox_is_ready_when_a_command_waits_or_it_is_closed() -> None:
    mailbox: Mailbox[Command] = Mailbox("m")
    assert not mailbox.ready
    mailbox.send_nowait(Ping(1))
    assert mailbox.ready
    mailbox.receive_nowait()
    assert not mailbox.ready
    mailbox.close("finished")
    assert mailbox.ready  # receive_nowait answers at once: ActorGoneError


async def test_a_receive_in_a_cancelled_scope_raises_cancelled_and_takes_nothing() -> None:
    mailbox: Mailbox[Command] = Mailbox("m")
    with trio.CancelScope() as scope:
        scope.cancel()
        await mailbox.receive()  # empty: the wait itself is the checkpoint
    assert scope.cancelled_caught
    mailbox.send_nowait(Ping(1))  # no receiver left behind to be woken
    with trio.CancelScope() as scope:
        scope.cancel()
        await mailbox.receive()  # a command waits: cancelled all the same, and it stays
    assert scope.cancelled_caught
    assert len(mailbox) == 1
