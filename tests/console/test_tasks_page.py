"""The tasks page in a real browser: each task version with its online workers and what waits
for it; a task no worker serves reads "no worker", and the execution page says why its unit
waits."""

from __future__ import annotations

from typing import Any

import pytest

from ..e2e.harness import ServerProcess

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

UNSERVED = """
workflow: console-unserved
version: 1.0.0
tasks: {console.nobody: {version: "3"}}
steps: [{id: wait_for_one, task: console.nobody}]
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
