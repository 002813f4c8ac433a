"""The tasks page in a real browser: each task version with its online workers and what waits
for it; a task no worker serves reads "no worker", and the execution page says why its unit
waits; a finished execution is deleted from its page."""

from __future__ import annotations

import re
from typing import Any

import pytest

from orbit_actors.client import ApiError

from ..e2e.harness import ServerProcess

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

UNSERVED = """
workflow: console-unserved
version: 1.0.0
tasks: {console.nobody: {version: "3"}}
steps: [{id: wait_for_one, task: console.nobody}]
"""
QUICK = """
workflow: console-quick
version: 1.0.0
steps: [{id: v, value: 1}]
"""


def test_a_task_no_worker_serves_shows_its_waiting_units(
    console_server: ServerProcess, page: Any
) -> None:
    with console_server.client() as client:
        client.deploy(UNSERVED)
        started = client.start("console-unserved")
    page.goto(console_server.url + "/#/tasks")
    row = page.locator('tr[data-task="console.nobody@3"]')
    expect(row).to_contain_text("no worker")
    expect(row.locator('td[data-label="Waiting"]')).to_have_text("1")
    served = page.locator('tr[data-task="console.echo@1"]')
    expect(served.locator('td[data-label="Workers online"]')).not_to_have_text("0")
    page.goto(f"{console_server.url}/#/executions/{started.execution_id}")
    page.locator('[data-step="wait_for_one"] summary').click()
    expect(page.locator('[data-waiting="no_worker"]')).to_have_text(
        "no online worker serves console.nobody@3; no worker has ever announced it"
    )


def test_a_finished_execution_is_deleted_from_its_page(
    console_server: ServerProcess, page: Any
) -> None:
    with console_server.client() as client:
        client.deploy(QUICK)
        started = client.start("console-quick")
        assert client.wait(started.execution_id, timeout=30).status == "completed"
    page.goto(f"{console_server.url}/#/executions/{started.execution_id}")
    page.get_by_role("button", name="Delete execution").click()
    page.get_by_role("button", name="Delete for good").click()
    expect(page).to_have_url(re.compile(r"#/executions$"))
    with console_server.client() as client, pytest.raises(ApiError) as gone:
        client.describe(started.execution_id)
    assert gone.value.status == 404
