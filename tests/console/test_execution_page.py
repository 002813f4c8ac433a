"""One execution's page in a real browser: its step graph, timeline, error, children and runs,
and steering it — the approval example signalled through its form, a query, a cancel."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ..e2e.harness import ServerProcess
from .conftest import example_input

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect


def _open(server: ServerProcess, page: Any, workflow: str, inputs: Any, wait: bool = False) -> str:
    with server.client() as client:
        execution_id = str(client.start(workflow, input=inputs).execution_id)
        if wait:
            client.wait(execution_id, timeout=60)
    page.goto(f"{server.url}/#/executions/{execution_id}")
    return execution_id


def test_the_graph_shows_each_steps_status(console_server: ServerProcess, page: Any) -> None:
    _open(console_server, page, "approval", example_input("approval"))
    expect(page.locator('.graph [data-step="ask"]')).to_have_class(re.compile("status-succeeded"))
    expect(page.locator('.graph [data-step="decide"]')).to_have_class(re.compile("status-running"))
    expect(page.locator('.graph [data-step="notify"]')).to_have_class(re.compile("status-pending"))
    expect(page.locator('.graph [data-step="tell_requester"]')).to_have_class(re.compile("handler"))


def test_a_fan_out_shows_its_progress(console_server: ServerProcess, page: Any) -> None:
    _open(console_server, page, "console-fan", {"items": [1, 2, 3]}, wait=True)
    expect(page.locator('.graph [data-step="each"]')).to_contain_text("3/3 succeeded")


def test_a_graph_box_opens_the_units_of_its_step(console_server: ServerProcess, page: Any) -> None:
    _open(console_server, page, "console-fan", {"items": [1, 2]}, wait=True)
    page.locator('.graph [data-step="each"]').press("Enter")
    units = page.locator('details[data-step="each"]')
    expect(units.locator('tr[data-unit="each[1]"]')).to_contain_text("console-tests")


def test_the_timeline_has_a_bar_per_attempt_naming_its_worker(
    console_server: ServerProcess, page: Any
) -> None:
    _open(console_server, page, "console-fan", {"items": [1]}, wait=True)
    bar = page.locator(".lane", has_text="first").locator(".bar-succeeded")
    expect(bar).to_have_attribute("aria-label", re.compile(r"attempt 1 on console-tests"))


def test_a_workers_stack_trace_reads_as_text(console_server: ServerProcess, page: Any) -> None:
    _open(console_server, page, "console-crash", {}, wait=True)
    trace = page.locator(".io pre.trace")
    expect(trace).to_contain_text("ValueError: cannot crash the console")
    expect(trace).not_to_contain_text("\\n")


def test_children_link_to_their_own_pages_and_back(
    console_server: ServerProcess, page: Any
) -> None:
    parent = _open(console_server, page, "month-end", example_input("month_end"), wait=True)
    expect(page.locator('.graph [data-step="invoices"]')).to_contain_text("4/4 succeeded")
    page.locator(".children a").first.click()
    expect(page.get_by_text("Parent")).to_be_visible()
    page.get_by_role("link", name=parent, exact=True).click()
    expect(page).to_have_url(re.compile(f"#/executions/{parent}$"))


def test_each_run_of_a_continue_as_new_can_be_shown(
    console_server: ServerProcess, page: Any
) -> None:
    execution_id = _open(console_server, page, "countdown", {"remaining": 1}, wait=True)
    runs = page.get_by_label("Run (continue-as-new)")
    expect(runs).to_have_value("2")
    runs.select_option("1")
    expect(page).to_have_url(re.compile(f"#/executions/{execution_id}\\?run=1$"))
    expect(page.locator(".lane", has_text="workflow")).to_have_attribute(
        "class", re.compile("lane")
    )
    expect(page.locator('.mark[aria-label="continued as new"]')).to_be_visible()


def test_the_approval_completes_after_its_signal_form_is_sent(
    console_server: ServerProcess, page: Any
) -> None:
    page.goto(console_server.url + "/#/executions")
    with console_server.client() as client:
        execution_id = client.start("approval", input=example_input("approval")).execution_id
    page.locator(f'tr[data-id="{execution_id}"] a').first.click()
    form = page.get_by_role("form", name="Signal decision")
    form.get_by_label("approved").check()
    form.get_by_label("by").fill("grace")
    form.get_by_role("button", name="Send decision").click()
    expect(page.locator(".notice")).to_contain_text("Signal decision accepted")
    expect(page.locator(".summary .badge").first).to_have_text("completed")
    expect(page.locator(".io")).to_contain_text('"by": "grace"')
    expect(page.locator(".io")).to_contain_text('"po_number": "po-')


def test_the_signal_form_refuses_what_the_server_would(
    console_server: ServerProcess, page: Any
) -> None:
    _open(console_server, page, "approval", example_input("approval"))
    form = page.get_by_role("form", name="Signal decision")
    form.get_by_role("button", name="Send decision").click()
    expect(form.get_by_role("alert")).to_contain_text("SIGNAL_PAYLOAD_INVALID: $.by: is required")


def test_a_declared_query_answers(console_server: ServerProcess, page: Any) -> None:
    _open(console_server, page, "approval", example_input("approval"))
    expect(page.locator('.graph [data-step="decide"]')).to_have_class(re.compile("status-running"))
    page.get_by_role("button", name="Run status").click()
    expect(page.locator(".query pre")).to_contain_text("waiting for a decision")


def test_cancel_with_a_reason_ends_the_execution(console_server: ServerProcess, page: Any) -> None:
    _open(console_server, page, "approval", example_input("approval"))
    page.get_by_label("Reason").fill("asked twice")
    page.get_by_role("button", name="Cancel execution").click()
    expect(page.locator(".summary .badge").first).to_have_text("cancelled")
    expect(page.locator(".io")).to_contain_text("asked twice")


def test_an_unknown_execution_shows_the_apis_message(
    console_server: ServerProcess, page: Any
) -> None:
    page.goto(console_server.url + "/#/executions/not-there")
    expect(page.get_by_role("alert")).to_contain_text("NOT_FOUND: execution not found")


def test_the_timeline_marks_signals_and_timers(console_server: ServerProcess, page: Any) -> None:
    execution_id = _open(console_server, page, "approval", example_input("approval"))
    expect(page.locator(".lane", has_text="decide").locator(".bar-timer")).to_be_visible()
    with console_server.client() as client:
        client.signal(execution_id, "decision", {"approved": False, "by": "ada"})
    expect(page.locator('.mark-signal[aria-label="signal decision"]')).to_be_visible()
    expect(page.locator(".lane", has_text="decide").locator(".mark-signal")).to_be_visible()


def test_a_signal_not_yet_awaited_is_listed_as_pending(
    console_server: ServerProcess, page: Any
) -> None:
    with console_server.client() as client:
        execution_id = client.start("console-later", input={}).execution_id
        client.signal(execution_id, "go", {"now": True})
    page.goto(f"{console_server.url}/#/executions/{execution_id}")
    expect(page.get_by_role("region", name="Pending signals")).to_contain_text("go (#")


def test_a_step_skipped_by_its_condition_reads_skipped(
    console_server: ServerProcess, page: Any
) -> None:
    _open(console_server, page, "countdown", {"remaining": 0}, wait=True)
    expect(page.locator('.graph [data-step="again"]')).to_have_class(re.compile("status-skipped"))


def _as_quarantined(route: Any) -> None:
    """The server's real detail, marked quarantined (a real server cannot be made to crash an
    actor from outside, so the answer is changed on its way to the page)."""
    answer = route.fetch()
    detail = answer.json()
    route.fulfill(response=answer, json={**detail, "quarantined": True, "last_error": "it crashed"})


def test_a_quarantined_execution_offers_resume(console_server: ServerProcess, page: Any) -> None:
    with console_server.client() as client:
        execution_id = client.start("approval", input=example_input("approval")).execution_id
    page.route(f"**/v1/executions/{execution_id}", _as_quarantined)
    page.goto(f"{console_server.url}/#/executions/{execution_id}")
    expect(page.locator(".summary")).to_contain_text("quarantined")
    page.get_by_role("button", name="Resume").click()
    expect(page.get_by_role("alert")).to_contain_text("NOT_QUARANTINED")


def test_a_compensation_shows_on_its_steps_box(console_server: ServerProcess, page: Any) -> None:
    _open(console_server, page, "console-saga", {}, wait=True)
    expect(page.locator('.graph [data-step="book"]')).to_contain_text("compensation succeeded")


def test_a_retry_shows_as_a_second_bar_after_a_mark(
    console_server: ServerProcess, page: Any
) -> None:
    _open(console_server, page, "console-saga", {}, wait=True)
    lane = page.locator(".lane", has_text="boom")
    expect(lane.locator(".mark-retry")).to_have_attribute("aria-label", re.compile("attempt 2"))
    expect(lane.locator(".bar-failed")).to_have_count(2)


def test_the_timeline_slider_redraws_the_graph_at_any_event(
    console_server: ServerProcess, page: Any
) -> None:
    _open(console_server, page, "approval", example_input("approval"))
    ask = page.locator('.graph [data-step="ask"]')
    expect(ask).to_have_class(re.compile("status-succeeded"))
    slider = page.get_by_label("Show the steps after event")
    slider.fill("3")
    expect(page.locator("#at-said")).to_contain_text("event 3 of")
    expect(page.locator("#at-said")).to_contain_text("StepScheduled ask")
    expect(ask).to_have_class(re.compile("status-running"))
    expect(page.locator('.graph [data-step="decide"]')).to_have_class(re.compile("status-pending"))
    slider.fill(slider.get_attribute("max"))
    expect(ask).to_have_class(re.compile("status-succeeded"))
    expect(page.locator('.graph [data-step="decide"]')).to_have_class(re.compile("status-running"))
