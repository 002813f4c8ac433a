"""Workers, schedules, definitions and servers in a real browser."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ..e2e.harness import ServerProcess
from .conftest import EXAMPLES

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect


def test_the_workers_page_shows_each_worker_online_with_its_contracts(
    console_server: ServerProcess, page: Any
) -> None:
    page.goto(console_server.url + "/#/workers")
    row = page.locator('tr[data-worker="examples"]')
    expect(row).to_contain_text("online")
    row.get_by_text(re.compile(r"\d+ contracts")).click()
    expect(row).to_contain_text("mail.send@1")


def _schedule_card(server: ServerProcess, page: Any, schedule_id: str, *, paused: bool) -> Any:
    """Create a schedule, open the schedules page; its card."""
    with server.client() as client:
        client.create_schedule(
            schedule_id, cron="0 2 * * *", workflow="console-fan", timezone="Asia/Tokyo",
            input={"items": []}, paused=paused,
        )  # fmt: skip
    page.goto(server.url + "/#/schedules")
    return page.locator(f'[data-schedule="{schedule_id}"]')


def test_a_schedules_next_occurrences_read_in_its_time_zone(
    console_server: ServerProcess, page: Any
) -> None:
    card = _schedule_card(console_server, page, "tokyo-nightly", paused=False)
    expect(card).to_contain_text("Next occurrences (Asia/Tokyo)")
    expect(card.locator("ol li").first).to_contain_text(re.compile(r"2:00:00\sAM GMT\+9"))


def test_a_schedule_pauses_and_resumes(console_server: ServerProcess, page: Any) -> None:
    card = _schedule_card(console_server, page, "pausable", paused=False)
    card.get_by_role("button", name="Pause").click()
    expect(card.locator(".badge")).to_have_text("paused")
    card.get_by_role("button", name="Resume").click()
    expect(card.locator(".badge")).to_have_text("active")


def test_triggering_a_schedule_links_the_execution_it_started(
    console_server: ServerProcess, page: Any
) -> None:
    card = _schedule_card(console_server, page, "triggered", paused=True)
    card.get_by_role("button", name="Trigger").click()
    expect(card.locator("ul a").first).to_have_text(re.compile(r"^triggered"))


def test_the_definitions_page_lists_versions_and_hashes(
    console_server: ServerProcess, page: Any
) -> None:
    with console_server.client() as client:
        known = client.definition("approval")
    page.goto(console_server.url + "/#/definitions")
    row = page.locator("tr", has_text="approval")
    expect(row).to_contain_text("1.0.0")
    expect(row).to_contain_text(known.definition_hash[:12])


def test_a_definition_shows_its_source_and_its_running_executions(
    console_server: ServerProcess, page: Any
) -> None:
    with console_server.client() as client:
        started = client.start("approval", input={"request_id": "R-9", "amount": 5})
    page.goto(console_server.url + "/#/definitions/approval/1.0.0")
    expect(page.get_by_label("definition source")).to_contain_text("await: decision")
    expect(page.get_by_role("link", name=started.execution_id)).to_be_visible()


def test_the_servers_page_shows_this_server_when_the_api_lists_none(
    console_server: ServerProcess, page: Any
) -> None:
    page.goto(console_server.url + "/#/servers")
    main = page.locator("main")
    expect(main).to_contain_text(console_server.url)
    expect(main).to_contain_text(re.compile(r"Readiness\s*ready|Address"))


def test_an_unknown_page_says_so(console_server: ServerProcess, page: Any) -> None:
    page.goto(console_server.url + "/#/nowhere")
    expect(page.get_by_role("alert")).to_contain_text("there is no page #/nowhere")


def test_the_skip_link_moves_the_focus_to_the_page(
    console_server: ServerProcess, page: Any
) -> None:
    page.goto(console_server.url + "/#/workers")
    expect(page.get_by_role("heading", name="Workers")).to_be_visible()
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()
    expect(page).to_have_url(re.compile(r"#/workers$"))


def test_checking_a_new_version_lists_the_executions_it_would_strand(
    console_server: ServerProcess, page: Any
) -> None:
    with console_server.client() as client:
        started = client.start("approval", input={"request_id": "R-10", "amount": 5})
    source = (EXAMPLES / "approval.yaml").read_text()
    candidate = source.replace("version: 1.0.0", "version: 2.0.0").replace(
        "steps:\n", "steps:\n  - {id: audit, value: audited}\n", 1
    )
    page.goto(console_server.url + "/#/definitions/approval/1.0.0")
    page.get_by_label("Candidate definition (YAML)").fill(candidate)
    page.get_by_role("button", name="Check").click()
    expect(page.locator(".check-summary")).to_contain_text("approval@2.0.0")
    row = page.locator(f'tr[data-execution="{started.execution_id}"]')
    expect(row).to_contain_text("seq 3")
    expect(row).to_contain_text("The candidate would schedule step `audit`")


def test_a_candidate_that_is_not_valid_yaml_is_refused_with_its_line(
    console_server: ServerProcess, page: Any
) -> None:
    page.goto(console_server.url + "/#/definitions/approval/1.0.0")
    page.get_by_label("Candidate definition (YAML)").fill("workflow: approval\nversion: [2\n")
    page.get_by_role("button", name="Check").click()
    expect(page.locator("#check-result")).to_contain_text("INVALID_IR")
    expect(page.locator("#check-result")).to_contain_text("3:1")
