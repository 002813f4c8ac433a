"""Operating an execution from its page in a real browser: pause and unpause, terminate after a
confirmation, and a rerun whose dry run is shown before it acts."""

from __future__ import annotations

from typing import Any

import pytest

from ..e2e.harness import ServerProcess, wait_until
from .conftest import example_input

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect


def _open(server: ServerProcess, page: Any, workflow: str, inputs: Any) -> str:
    with server.client() as client:
        execution_id = str(client.start(workflow, input=inputs).execution_id)
    page.goto(f"{server.url}/#/executions/{execution_id}")
    return execution_id


def test_pause_then_unpause_from_the_page(console_server: ServerProcess, page: Any) -> None:
    execution_id = _open(console_server, page, "approval", example_input("approval"))
    page.get_by_label("Why pause").fill("checking")
    page.get_by_role("button", name="Pause execution").click()
    expect(page.get_by_role("button", name="Unpause")).to_be_visible()
    with console_server.client() as client:
        assert client.describe(execution_id).paused
    page.get_by_role("button", name="Unpause").click()
    expect(page.get_by_role("button", name="Pause execution")).to_be_visible()


def test_terminate_asks_first_then_ends_the_execution(
    console_server: ServerProcess, page: Any
) -> None:
    execution_id = _open(console_server, page, "approval", example_input("approval"))
    page.get_by_label("Why terminate").fill("duplicate request")
    page.get_by_role("button", name="Terminate…").click()
    page.get_by_role("button", name="Back").click()
    with console_server.client() as client:
        assert client.describe(execution_id).status == "running"  # nothing until confirmed
    page.get_by_role("button", name="Terminate…").click()
    page.get_by_role("button", name="Yes, terminate").click()
    expect(page.locator(".summary .badge").first).to_have_text("terminated")


def test_a_failed_execution_is_rerun_after_its_dry_run_is_shown(
    console_server: ServerProcess, page: Any
) -> None:
    with console_server.client() as client:
        execution_id = str(client.start("console-crash", input={}).execution_id)
        assert client.result(execution_id, timeout=60).status == "failed"
    page.goto(f"{console_server.url}/#/executions/{execution_id}")
    page.get_by_role("button", name="Preview rerun").click()
    expect(page.locator(".rerun-plan")).to_contain_text("Run again")
    expect(page.locator(".rerun-plan")).to_contain_text("boom")
    page.get_by_role("button", name="Rerun from boom").click()
    page.get_by_role("button", name="Yes, rerun").click()
    with console_server.client() as client:
        wait_until(lambda: client.describe(execution_id).run == 2, what="run 2")
