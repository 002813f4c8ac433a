"""A queued execution in a real browser: its own status tab with a count, its status on the
execution page with why it waits, and a cancel that drops it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ..e2e.harness import ServerProcess

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

ONE_AT_A_TIME = """
workflow: console-keyed
version: 1.0.0
input: {type: object, properties: {customer: {type: string}}}
flow: {concurrency: {key: '${input.customer}', limit: 1}}
signals: {done: null}
steps: [{id: wait, await: done}]
"""


def test_a_queued_execution_is_listed_shown_and_cancelled(
    console_server: ServerProcess, page: Any
) -> None:
    with console_server.client() as client:
        client.deploy(ONE_AT_A_TIME)
        client.start("console-keyed", input={"customer": "c"}, execution_id="keyed-first")
        client.start("console-keyed", input={"customer": "c"}, execution_id="keyed-second")
    page.goto(console_server.url + "/#/executions")
    queued = page.locator('[data-status="queued"]')
    expect(queued).to_contain_text(re.compile(r"queued\s+1"))
    queued.click()
    expect(page.locator('tr[data-id="keyed-second"]')).to_contain_text("queued")
    expect(page.locator('tr[data-id="keyed-first"]')).to_have_count(0)
    page.goto(console_server.url + "/#/executions/keyed-second")
    expect(page.get_by_text("waits for a slot of its concurrency key")).to_be_visible()
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator(".status-cancelled").first).to_be_visible()
