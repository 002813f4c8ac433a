"""A batch from the executions page in a real browser: the form counts what its filter matches
(the dry run) before anything is done, acts only after the confirmation, and shows the batch's
progress until it is done."""

from __future__ import annotations

from typing import Any

import pytest

from ..e2e.harness import ServerProcess
from .conftest import example_input

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect


def test_the_batch_form_counts_first_then_pauses_and_shows_the_progress(
    console_server: ServerProcess, page: Any
) -> None:
    with console_server.client() as client:
        ids = [client.start("approval", input=example_input("approval")).execution_id
               for _ in range(3)]  # fmt: skip
    page.goto(f"{console_server.url}/#/executions?status=running&workflow=approval")
    page.get_by_text("Act on many executions").click()
    page.get_by_label("Action").select_option("pause")
    page.get_by_label("Why").fill("carrier down")
    page.get_by_role("button", name="Count matching executions").click()
    expect(page.get_by_text("Matches 3 executions now.")).to_be_visible()
    with console_server.client() as client:
        assert not any(client.describe(i).paused for i in ids)  # nothing done before the yes
    page.get_by_role("button", name="Yes, pause 3").click()
    expect(page.get_by_text("3 done, 0 failed of 3").first).to_be_visible()
    with console_server.client() as client:
        assert all(client.describe(i).paused for i in ids)
        (batch,) = client.batches().batches
        assert (batch.action, batch.reason, batch.state) == ("pause", "carrier down", "completed")
