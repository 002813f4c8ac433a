"""Every status word the execution page shows agrees with the history it comes from: the
execution's badge with how the run ended, and each step's and handler's badge with the unit
events of that step (a handler that never ran on a finished execution is "not run", never
"pending")."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ..e2e.harness import ServerProcess
from .conftest import example_input

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

ENDINGS = {"WorkflowCompleted": "completed", "WorkflowFailed": "failed",
           "WorkflowCancelled": "cancelled", "WorkflowTimedOut": "timed_out"}  # fmt: skip
UNIT_ENDS = {"StepSucceeded": "succeeded", "StepFailed": "failed", "StepCancelled": "cancelled"}


def _owner(key: str) -> str:
    return re.sub(r"\[\d+\]$", "", re.sub(r"^(compensate|handler):", "", key))


def step_word(step_id: str, events: list[dict[str, Any]], finished: bool) -> str:
    """What a step's status is, read from the history alone."""
    units: dict[str, str] = {}
    for event in events:
        key = event.get("step")
        if not isinstance(key, str) or key.startswith("compensate:") or _owner(key) != step_id:
            continue
        if event["type"] in UNIT_ENDS:
            units[key] = UNIT_ENDS[event["type"]]
        elif event["type"] == "StepScheduled":
            units.setdefault(key, "running")
    skipped = any(e["type"] == "StepSkipped" and e["step"] == step_id for e in events)
    empty_fan_out = any(e["type"] == "StepFanOut" and e["step"] == step_id and not e["items"]
                        for e in events)  # fmt: skip
    if not units:
        return (
            "skipped"
            if skipped
            else "succeeded"
            if empty_fan_out
            else ("not run" if finished else "pending")
        )
    for word in ("running", "failed", "cancelled"):
        if word in units.values():
            return word
    return "succeeded"


def unit_words(events: list[dict[str, Any]]) -> dict[str, str]:
    """Each unit's last word in the history (compensations included)."""
    words: dict[str, str] = {}
    for event in events:
        if event["type"] in UNIT_ENDS:
            words[event["step"]] = UNIT_ENDS[event["type"]]
    return words


def _all_step_ids(ir: dict[str, Any]) -> list[str]:
    lists = [
        ir["steps"],
        *(ir.get(name) or [] for name in ("on_failure", "on_cancel", "on_timeout")),
    ]
    return [step["id"] for steps in lists for step in steps]


@pytest.mark.parametrize(
    "inputs",
    [example_input("order_saga"),  # completes: its on_failure handler never runs
     {**example_input("order_saga"), "amount": 20_000}],  # declined: compensated, handler runs
    ids=["completed", "failed"],
)  # fmt: skip
def test_every_status_word_agrees_with_the_history(
    console_server: ServerProcess, page: Any, inputs: dict[str, Any]
) -> None:
    with console_server.client() as client:
        execution_id = client.start("order-saga", input=inputs).execution_id
        client.wait(execution_id, timeout=60)
        events = client.history(execution_id).events
        detail = client.describe(execution_id)
        ir = client.definition("order-saga", detail.version).ir
    ending = ENDINGS[events[-1]["type"]]
    page.goto(f"{console_server.url}/#/executions/{execution_id}")
    expect(page.locator(".status-line .badge").first).to_have_text(ending)
    for step_id in _all_step_ids(ir):
        word = step_word(step_id, events, finished=True)
        badge = page.locator(f'details[data-step="{step_id}"] summary .badge')
        expect(badge).to_have_text(word)
        expect(page.locator(f'.graph [data-step="{step_id}"]')).to_contain_text(word)
    for key, word in unit_words(events).items():
        section = page.locator(f'details[data-step="{_owner(key)}"]')
        if section.get_attribute("open") is None:
            section.locator("summary").click()
        expect(section.locator(f'tr[data-unit="{key}"] .badge')).to_have_text(word)
    if ending == "completed":
        expect(page.locator('details[data-step="tell_ops"] summary .badge')).to_have_text("not run")
