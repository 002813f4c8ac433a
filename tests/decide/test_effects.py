"""Effects of a committed batch: ready units, tokens cancelled at workers, children cancelled."""

from __future__ import annotations

from collections.abc import Callable

from orbit_actors.decide import ChildInvocation, Effects, TaskInvocation, effects_of
from orbit_actors.testing import Driver
from tests.conftest import driver


def effects_after(d: Driver, action: Callable[[], object]) -> Effects:
    before = len(d.history)
    action()
    return effects_of(d.state, d.definition, d.history[before:])


def test_scheduled_units_are_ready_with_what_they_invoke() -> None:
    d = driver(
        "workflows: {kid: {version: 1.0.0}}\nsteps: [{id: a, task: t}, {id: b, workflow: kid, after: []}, {id: c, value: 1, after: []}]"
    )
    ready = effects_of(d.state, d.definition, d.history).ready
    assert [type(r) for r in ready] == [TaskInvocation, ChildInvocation]


def test_cancelled_units_cancel_their_tokens_and_children() -> None:
    d = driver(
        "workflows: {kid: {version: 1.0.0}}\nsteps: [{id: a, task: t}, {id: b, workflow: kid, after: []}]"
    )
    token = d.dispatch("a")
    d.dispatch("b", "orbit-runtime", "child:ex-1.b")
    out = effects_after(d, lambda: d.cancel("stop"))
    assert out.cancel_tokens[token] == "execution cancelled"
    assert out.cancel_children == {"ex-1.b": "parent workflow aborted"}
    assert out.finished


def test_a_timed_out_attempt_cancels_its_token() -> None:
    d = driver("steps: [{id: a, task: t, timeout: 1s}]")
    token = d.dispatch("a")
    out = effects_after(d, lambda: d.advance(1000))
    assert out.cancel_tokens == {token: "attempt timed out"}


def test_a_unit_resolved_by_a_late_success_cancels_the_newer_attempt() -> None:
    d = driver("steps: [{id: a, task: t}, {id: b, task: t}]")
    old = d.dispatch("a")
    d.lose_worker(old)
    new = d.dispatch("a", "w2", "s2")
    out = effects_after(d, lambda: d.complete(old, 1))
    assert new in out.cancel_tokens
    assert [r.key for r in out.ready] == ["b"]


def test_cleanup_units_are_not_cancelled_by_the_abort() -> None:
    d = driver(
        "steps: [{id: a, task: t, compensate: {task: undo}}, {id: b, task: t, retry: {max_attempts: 1}}]"
    )
    d.run_task("a")
    out = effects_after(d, lambda: d.fail(d.dispatch("b")))
    assert [r.key for r in out.ready] == ["compensate:a"]
