"""The upgrade check's core: a candidate is compatible with a recorded run when, fed the recorded
events, it decides exactly the recorded steps, in the same order, with the same inputs. Golden
pairs (base, candidate, history driven under the base) for each kind of change, each with the
seq where it must diverge (or none)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbit_actors.decide.compat import Divergence, first_divergence
from orbit_actors.history import events as ev
from orbit_actors.ir import CompiledDefinition
from orbit_actors.testing import Driver
from tests.conftest import definition
from tests.test_golden import load

BASE = """
signals:
  approve: {type: object, properties: {by: {type: string}}}
steps:
  - {id: charge, task: t, input: {amount: "${input.n}"}, retry: {max_attempts: 3}}
  - {id: wait, await: approve, timeout: 2d}
  - {id: ship, task: t2, input: {by: "${steps.wait.output.by}"}}
"""


def lookup(*definitions: CompiledDefinition) -> Callable[[str], CompiledDefinition | None]:
    """The definitions a history ran under, by hash."""
    known = {d.definition_hash: d for d in definitions}
    return known.get


def check(
    base: CompiledDefinition, candidate_body: str, history: list[ev.Event]
) -> Divergence | None:
    return first_divergence(history, definition(candidate_body), lookup(base))


def waiting_for_approval() -> tuple[CompiledDefinition, list[ev.Event]]:
    """charge failed once, was retried and succeeded; the run waits for `approve`."""
    base = definition(BASE)
    d = Driver(base).start({"n": 5})
    d.fail(d.dispatch("charge"))
    d.advance(1000)
    d.run_task("charge", {"ok": True})
    return base, d.history


def seq_of(history: list[ev.Event], type_name: str, step: str) -> int:
    return next(e.seq for e in history if e.type == type_name and getattr(e, "step", None) == step)


def test_the_same_definition_is_compatible() -> None:
    base, history = waiting_for_approval()
    assert check(base, BASE, history) is None


def test_a_step_added_after_the_current_position_is_compatible() -> None:
    base, history = waiting_for_approval()
    candidate = BASE + '  - {id: thank, task: t, input: {to: "${input.n}"}}\n'
    assert check(base, candidate, history) is None


def test_a_step_inserted_before_the_current_position_diverges_where_it_would_run() -> None:
    base, history = waiting_for_approval()
    candidate = BASE.replace("steps:\n", "steps:\n  - {id: audit, task: t2}\n")
    found = check(base, candidate, history)
    assert found is not None and found.seq == seq_of(history, "StepScheduled", "charge") == 3
    assert "schedule step `charge`" in found.recorded
    assert found.candidate.startswith("The candidate would schedule step `audit`")


def test_a_changed_input_expression_diverges_at_the_step_it_feeds() -> None:
    base, history = waiting_for_approval()
    found = check(base, BASE.replace("${input.n}", "${input.n * 100}"), history)
    assert found is not None and found.seq == 3
    assert '{"amount":5}' in found.recorded and '{"amount":500}' in found.candidate


def test_a_changed_retry_policy_is_compatible() -> None:
    base, history = waiting_for_approval()
    assert any(e.type == "RetryScheduled" for e in history)
    candidate = BASE.replace(
        "retry: {max_attempts: 3}", "retry: {max_attempts: 6, initial_interval: 5s, backoff: 3}"
    )
    assert check(base, candidate, history) is None


def test_a_retry_policy_that_would_have_given_up_diverges_at_the_retry() -> None:
    base, history = waiting_for_approval()
    found = check(base, BASE.replace("max_attempts: 3", "max_attempts: 1"), history)
    assert found is not None and found.seq == seq_of(history, "RetryScheduled", "charge")
    assert "fail step `charge`" in found.candidate


def test_a_removed_signal_that_the_execution_already_received_diverges_where_it_arrived() -> None:
    base = definition(BASE)
    d = Driver(base).start({"n": 5})
    d.dispatch("charge")
    [received] = d.signal("approve", {"by": "ann"})
    candidate = """
steps:
  - {id: charge, task: t, input: {amount: "${input.n}"}, retry: {max_attempts: 3}}
  - {id: ship, task: t2, input: {by: nobody}}
"""
    found = check(base, candidate, d.history)
    assert found is not None and found.seq == received.seq
    assert (
        found.candidate == "The candidate would refuse signal `approve`, which it does not declare."
    )


FAN = """
steps:
  - {id: pick, for: input.items, as: it, task: t, input: {sku: "${it}"}}
  - {id: pack, task: t2}
"""


def test_a_changed_fan_out_diverges_at_the_fan_out() -> None:
    base = definition(FAN)
    d = Driver(base).start({"items": ["a", "b", "c"]})
    d.run_task("pick[0]")
    found = check(
        base, FAN.replace("for: input.items", "for: 'input.items.filter(i, i != \"b\")'"), d.history
    )
    assert found is not None and found.seq == seq_of(d.history, "StepFanOut", "pick")
    assert "over 3 items" in found.recorded and "over 2 items" in found.candidate


def test_a_lower_fan_out_concurrency_diverges_where_an_element_would_wait() -> None:
    base = definition(FAN)
    d = Driver(base).start({"items": ["a", "b", "c"]})
    found = check(base, FAN.replace("as: it,", "as: it, concurrency: 1,"), d.history)
    assert found is not None and found.seq == seq_of(d.history, "StepScheduled", "pick[1]")


CHILD = """
workflows:
  invoice: {version: 1.0.0}
steps:
  - {id: prepare, task: t}
  - {id: bill, workflow: invoice, input: {amount: 3}}
"""


def test_a_childs_version_changed_diverges_where_the_child_was_started() -> None:
    base = definition(CHILD)
    d = Driver(base).start({})
    d.run_task("prepare")
    d.dispatch("bill", worker_id="orbit-runtime", session="child:ex-1.bill")
    found = check(base, CHILD.replace("{version: 1.0.0}", "{version: 2.0.0}"), d.history)
    assert found is not None and found.seq == seq_of(d.history, "StepDispatched", "bill")
    assert (
        "child workflow `invoice@2.0.0` instead of child workflow `invoice@1.0.0`"
        in found.candidate
    )


def test_a_childs_version_changed_before_the_child_started_is_compatible() -> None:
    base = definition(CHILD)
    d = Driver(base).start({})
    d.dispatch("prepare")
    assert check(base, CHILD.replace("{version: 1.0.0}", "{version: 2.0.0}"), d.history) is None


def test_a_step_the_candidate_would_already_run_diverges_after_the_last_event() -> None:
    base, history = waiting_for_approval()
    found = check(base, BASE + "  - {id: side, task: t, after: [charge]}\n", history)
    assert found is not None and found.seq <= history[-1].seq + 1


def test_a_history_with_a_migration_replays_under_each_version() -> None:
    base, history = waiting_for_approval()
    newer = definition(BASE.replace("version: 1.0.0", "version: 1.1.0"))
    migrated = ev.DefinitionMigrated(
        seq=len(history) + 1, timestamp_ms=history[-1].timestamp_ms, from_version="1.0.0",
        to_version="1.1.0", definition_hash=newer.definition_hash,
    )  # fmt: skip
    assert first_divergence([*history, migrated], newer, lookup(base, newer)) is None


# -- properties ---------------------------------------------------------------------------------
ACTIONS = st.lists(st.sampled_from(["complete", "fail", "signal", "wait"]), max_size=12)


def drive(actions: list[str]) -> tuple[CompiledDefinition, list[ev.Event]]:
    """A run of BASE driven by an arbitrary sequence of outside events."""
    base = definition(BASE)
    d = Driver(base).start({"n": 1})
    for action in actions:
        if d.state.finished:
            break
        ready = d.scheduled()
        if action in ("complete", "fail") and ready:
            token = d.dispatch(ready[0])
            if action == "complete":
                d.complete(token, {"ok": True})
            else:
                d.fail(token)
        elif action == "signal":
            d.signal("approve", {"by": "ann"})
        else:
            d.advance(60_000)
    return base, d.history


@settings(max_examples=60, deadline=None)
@given(ACTIONS)
def test_every_history_is_compatible_with_its_own_definition(actions: list[str]) -> None:
    base, history = drive(actions)
    assert first_divergence(history, base, lookup(base)) is None


@settings(max_examples=60, deadline=None)
@given(ACTIONS)
def test_a_step_inserted_first_diverges_at_seq_3_in_every_history(actions: list[str]) -> None:
    base, history = drive(actions)
    candidate = definition(BASE.replace("steps:\n", "steps:\n  - {id: audit, task: t2}\n"))
    found = first_divergence(history, candidate, lookup(base))
    assert found is not None and found.seq == 3


# -- the checked-in golden histories --------------------------------------------------------------
GOLDEN = sorted((Path(__file__).resolve().parent.parent / "golden").glob("*.jsonl"))


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.name)
def test_every_golden_history_is_compatible_with_its_own_definition(path: Path) -> None:
    base, history = load(path)
    assert first_divergence(history, base, lookup(base)) is None


def test_the_broken_golden_history_diverges_where_its_input_was_changed() -> None:
    base, history = load(GOLDEN[0].parent / "broken" / "order_saga_wrong_input.jsonl")
    found = first_divergence(history, base, lookup(base))
    assert found is not None and "schedule step" in found.recorded


LOOP = """
signals:
  go: null
  extra: null
steps:
  - {id: w, await: go}
  - {id: again, when: input.n > 0, continue_as_new: {n: "${input.n - 1}"}}
"""


def test_a_run_after_continue_as_new_with_signals_carried_over_is_compatible() -> None:
    base = definition(LOOP)
    d = Driver(base).start({"n": 1})
    d.signal("extra")
    d.signal("go")
    assert d.runs and d.history[2].type == "SignalReceived"  # carried into run 2, undecided
    assert first_divergence(d.history, base, lookup(base)) is None
    d.advance(1)
    assert first_divergence(d.history, base, lookup(base)) is None
