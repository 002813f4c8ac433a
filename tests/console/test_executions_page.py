"""The executions page in a real browser: what it lists, its counts and filters, its paging,
and that it follows the store without a reload."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ..e2e.harness import ServerProcess
from .conftest import example_input

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect


def _start(
    server: ServerProcess, workflow: str, inputs: Any, execution_id: str | None = None
) -> str:
    with server.client() as client:
        started = client.start(workflow, input=inputs, execution_id=execution_id)
    return str(started.execution_id)


def test_a_running_execution_is_listed_with_its_status(
    console_server: ServerProcess, page: Any
) -> None:
    execution_id = _start(console_server, "approval", example_input("approval"))
    page.goto(console_server.url + "/#/executions")
    row = page.locator(f'tr[data-id="{execution_id}"]')
    expect(row).to_contain_text("approval@1.0.0")
    expect(row).to_contain_text("running")


def test_a_new_execution_appears_without_a_reload(console_server: ServerProcess, page: Any) -> None:
    page.goto(console_server.url + "/#/executions")
    expect(page.get_by_role("heading", name="Executions")).to_be_visible()
    execution_id = _start(console_server, "approval", example_input("approval"), "appears-live")
    expect(page.locator(f'tr[data-id="{execution_id}"]')).to_be_visible()


def test_the_status_tabs_count_and_filter(console_server: ServerProcess, page: Any) -> None:
    execution_id = _start(console_server, "console-crash", {})
    with console_server.client() as client:
        client.wait(execution_id, timeout=60)
    page.goto(console_server.url + "/#/executions")
    failed = page.locator('[data-status="failed"]')
    expect(failed).to_contain_text(re.compile(r"failed\s+[1-9]"))
    failed.click()
    expect(page).to_have_url(re.compile(r"status=failed"))
    expect(page.locator(f'tr[data-id="{execution_id}"]')).to_be_visible()
    expect(page.locator("tbody tr").filter(has_text="running")).to_have_count(0)


def test_the_workflow_filter_keeps_only_that_workflow(
    console_server: ServerProcess, page: Any
) -> None:
    _start(console_server, "approval", example_input("approval"))
    crashed = _start(console_server, "console-crash", {})
    page.goto(console_server.url + "/#/executions")
    page.get_by_label("Workflow").select_option("console-crash")
    expect(page).to_have_url(re.compile(r"workflow=console-crash"))
    expect(page.locator(f'tr[data-id="{crashed}"]')).to_be_visible()
    expect(page.locator("tbody tr").filter(has_text="approval@")).to_have_count(0)


def test_paging_goes_to_older_executions_and_back(console_server: ServerProcess, page: Any) -> None:
    first = _start(console_server, "console-crash", {}, "paging-oldest")
    for n in range(55):
        _start(console_server, "console-crash", {}, f"paging-{n}")
    page.goto(console_server.url + "/#/executions?workflow=console-crash")
    expect(page.locator('tr[data-id="paging-54"]')).to_be_visible()
    expect(page.locator(f'tr[data-id="{first}"]')).to_have_count(0)
    page.get_by_role("link", name="Older").click()
    expect(page.locator(f'tr[data-id="{first}"]')).to_be_visible()
    page.get_by_role("link", name="Newer").click()
    expect(page.locator('tr[data-id="paging-54"]')).to_be_visible()


def test_opening_an_unknown_id_shows_the_apis_message(
    console_server: ServerProcess, page: Any
) -> None:
    page.goto(console_server.url + "/#/executions")
    page.get_by_label("Open by id").fill("no-such-execution")
    page.get_by_role("button", name="Open").click()
    expect(page.get_by_role("alert")).to_contain_text("NOT_FOUND: execution not found")


def test_opening_a_known_id_goes_to_its_page(console_server: ServerProcess, page: Any) -> None:
    execution_id = _start(console_server, "approval", example_input("approval"), "open-me")
    page.goto(console_server.url + "/#/executions")
    page.get_by_label("Open by id").fill(execution_id)
    page.get_by_label("Open by id").press("Enter")
    expect(page).to_have_url(re.compile(r"#/executions/open-me$"))
    expect(page.get_by_role("heading", name="open-me", exact=True)).to_be_visible()


def test_at_a_phones_width_each_row_fits_the_screen(
    console_server: ServerProcess, page: Any
) -> None:
    execution_id = _start(console_server, "approval", example_input("approval"))
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(console_server.url + "/#/executions")
    status = page.locator(f'tr[data-id="{execution_id}"] .badge')
    expect(status).to_be_visible()
    box = status.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
