"""Properties of the pure core over generated workflows and generated worker/signal/clock
behaviour: replay equals the fold, decide is deterministic and pure, the fixpoint is stable, and
no reachable history has a seq gap or an event after its terminal event."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orbit_actors.decide import decide
from orbit_actors.decide.decider import next_wakeup
from orbit_actors.decide.invocation import CHILD_SESSION, unit_kind
from orbit_actors.decide.rest import rest_of
from orbit_actors.history import TERMINAL_TYPES, ExecutionState, event_from_json, replay
from orbit_actors.history.events import event_to_json
from orbit_actors.ir import compile_source
from orbit_actors.testing import Driver

KINDS = ["task", "task", "value", "sleep", "await", "fanout", "child", "loop"]


@st.composite
def definitions(draw: st.DrawFn) -> str:
    """A small random but valid workflow definition (YAML)."""
    count = draw(st.integers(1, 5))
    lines = ["workflow: gen", "version: 1.0.0", 'tasks: {t: {version: "1"}, undo: {version: "1"}}',
             "workflows: {kid: {version: 1.0.0}}", "signals: {go: null}"]  # fmt: skip
    if draw(st.booleans()):
        lines.append(f"timeout: {draw(st.integers(1, 120))}s")
    lines.append(f"retry: {{max_attempts: {draw(st.integers(1, 3))}, initial_interval: 1s}}")
    lines.append("steps:")
    for index in range(count):
        lines.append("  - " + _step(draw, index))
    if draw(st.booleans()):
        lines.append("on_failure: [{id: h_fail, task: t, input: {code: '${error.code}'}}]")
    if draw(st.booleans()):
        lines.append("on_cancel: [{id: h_cancel, value: '${error.message}'}]")
    if draw(st.booleans()):
        lines.append("on_timeout: [{id: h_timeout, value: 1}]")
    return "\n".join(lines) + "\n"


def _step(draw: st.DrawFn, index: int) -> str:
    kind = draw(st.sampled_from(KINDS))
    fields = [f"id: s{index}"]
    if index and draw(st.booleans()):
        fields.append("after: []")
    if draw(st.integers(0, 4)) == 0:
        fields.append("on_error: continue")
    if kind == "task":
        fields += ["task: t", f"input: {{n: {index}}}"]
        if draw(st.booleans()):
            fields.append("timeout: 5s")
        if draw(st.booleans()):
            fields.append("compensate: {task: undo}")
    elif kind == "value":
        fields.append("value: '${input}'")
    elif kind == "sleep":
        fields.append(f"sleep: {draw(st.integers(0, 3))}s")
    elif kind == "await":
        fields.append("await: go")
        if draw(st.booleans()):
            fields.append("timeout: 3s")
    elif kind == "child":
        fields.append("workflow: kid")
    elif kind == "loop":
        fields += ["when: size(input.items) > 0", "continue_as_new: {items: []}"]
    else:
        fields += ["task: t", "for: input.items", f"concurrency: {draw(st.integers(1, 3))}",
                   "input: {x: '${item}'}"]  # fmt: skip
    return "{" + ", ".join(fields) + "}"


Action = tuple[str, int]
actions = st.lists(
    st.tuples(
        st.sampled_from(
            ["complete", "fail", "fail_final", "lose", "advance", "signal", "cancel", "late"]
        ),
        st.integers(0, 10_000),
    ),
    max_size=25,
)


def drive(d: Driver, plan: list[Action]) -> list[str]:
    """Play ``plan`` against ``d``; returns the tokens that were issued."""
    tokens: list[str] = []
    for action, number in plan:
        if d.state.finished:
            break
        if action == "advance":
            d.advance(number)
        elif action == "signal":
            d.signal("go", number)
        elif action == "cancel":
            d.cancel("test")
        elif action == "late" and tokens:
            d.complete(tokens[number % len(tokens)], {"late": number})
        else:
            _work(d, action, number, tokens)
    return tokens


def _work(d: Driver, action: str, number: int, tokens: list[str]) -> None:
    ready = d.scheduled()
    if not ready:
        d.advance(number)
        return
    key = ready[number % len(ready)]
    if d.invocation(key).__class__.__name__ == "ChildInvocation":
        from orbit_actors.decide import child_finished

        d.dispatch(key, "orbit-runtime", f"child:{key}")
        status = "completed" if action == "complete" else "failed"
        d.record(
            child_finished(
                d.state, key, workflow="kid", child_id=key, status=status, output={}, now=d.now
            )
        )
        return
    token = d.dispatch(key)
    tokens.append(token)
    if action == "complete":
        d.complete(token, {"k": key})
    elif action in ("fail", "fail_final"):
        d.fail(token, "E", "boom", retryable=action == "fail")
    else:
        d.lose_worker(token)


def fingerprint(state: ExecutionState) -> Any:
    """Everything meaningful in a state, as plain data."""
    units = {
        k: (u.status, u.attempt, u.input, u.current_token, sorted(u.tokens.items()), u.output,
            u.error.model_dump() if u.error else None, u.redelivery, u.next_attempt, u.fire_at_ms)
        for k, u in state.units.items()
    }  # fmt: skip
    steps = {
        k: (r.status, r.attempts, r.output, r.error.model_dump() if r.error else None, r.items,
            r.next_index, r.succeeded, list(r.active), r.failed_element)
        for k, r in state.steps.items()
    }  # fmt: skip
    return json.dumps(
        {
            "units": units, "steps": steps, "status": state.status, "last_seq": state.last_seq,
            "output": state.output, "signals": [(s.seq, s.name, s.delivered_to) for s in state.signals.values()],
            "attention": list(state.attention), "inflight": list(state.inflight),
            "abort": repr(state.abort_mark), "order": state.succeeded_order, "failed": state.failed_steps,
            "next_timer": state.next_timer_ms(),
        },
        sort_keys=True,
        default=str,
    )  # fmt: skip


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(definitions(), actions, st.lists(st.integers(0, 9), max_size=4))
def test_replay_equals_the_fold_and_the_fixpoint_is_stable(
    text: str, plan: list[Action], items: list[int]
) -> None:
    d = Driver(compile_source(text)).start({"items": items})
    drive(d, plan)
    for history in [*d.runs, d.history]:
        _assert_well_formed(history)
    assert fingerprint(replay(d.history)) == fingerprint(d.state)
    if d.state.steps:  # a run just started by continue-as-new decides on its next wake-up
        assert decide(d.state, d.definition, d.now) == []


@SETTINGS
@given(definitions(), actions, st.lists(st.integers(0, 9), max_size=4))
def test_every_batch_ends_at_the_fixpoint(text: str, plan: list[Action], items: list[int]) -> None:
    d = Driver(compile_source(text)).start({"items": items})
    for action in plan:
        drive(d, [action])
        if d.state.steps:  # a run just started by continue-as-new decides on its next wake-up
            assert decide(d.state, d.definition, d.now) == []


@SETTINGS
@given(definitions(), actions, st.lists(st.integers(0, 9), max_size=4), st.integers(0, 5000))
def test_decide_is_deterministic_and_never_mutates_the_state(
    text: str, plan: list[Action], items: list[int], later: int
) -> None:
    d = Driver(compile_source(text)).start({"items": items})
    drive(d, plan)
    before = fingerprint(d.state)
    first = decide(d.state, d.definition, d.now + later)
    second = decide(d.state, d.definition, d.now + later)
    assert first == second
    assert fingerprint(d.state) == before


@SETTINGS
@given(definitions(), actions, st.lists(st.integers(0, 9), max_size=4))
def test_histories_survive_their_json_form(text: str, plan: list[Action], items: list[int]) -> None:
    d = Driver(compile_source(text)).start({"items": items})
    drive(d, plan)
    decoded = [event_from_json(event_to_json(e)) for e in d.history]
    assert decoded == d.history
    assert fingerprint(replay(decoded)) == fingerprint(d.state)


def _assert_well_formed(history: list[Any]) -> None:
    assert [e.seq for e in history] == list(range(1, len(history) + 1))
    terminal = [i for i, e in enumerate(history) if e.type in TERMINAL_TYPES]
    assert terminal in ([], [len(history) - 1])


@SETTINGS
@given(definitions(), actions, st.lists(st.integers(0, 9), max_size=4))
def test_an_execution_rests_exactly_when_nothing_run_is_in_hand(
    text: str, plan: list[Action], items: list[int]
) -> None:
    d = Driver(compile_source(text)).start({"items": items})
    drive(d, plan)
    state, definition = d.state, d.definition
    rest = rest_of(state, definition)
    in_hand = [
        u for u in state.units.values()
        if u.status in {"scheduled", "dispatched", "attempt_failed", "uncertain"}
        and unit_kind(definition, u) in {"task", "http", "workflow"}
    ]  # fmt: skip
    at_children = [u for u in in_hand if (u.session or "").startswith(CHILD_SESSION)]
    assert rest.wake_at_ms == next_wakeup(state, definition)
    if state.started and not state.finished:
        assert rest.busy == bool(in_hand)
        assert rest.rests == (len(at_children) == len(in_hand))
    assert rest_of(replay(d.history), definition) == rest  # what a restart reads back
