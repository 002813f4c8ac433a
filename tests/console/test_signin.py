"""Behind ``--admin-token`` the console shows only its sign-in page until the token is given,
then sends it as the bearer token."""

from __future__ import annotations

from typing import Any

import pytest

from ..e2e.harness import ServerProcess
from .conftest import TOKEN, serious_violations

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect


def test_only_the_sign_in_page_shows_without_the_token(guarded: ServerProcess, page: Any) -> None:
    page.goto(guarded.url + "/#/executions")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_role("navigation", name="Sections")).to_be_hidden()


def test_a_wrong_token_is_refused(guarded: ServerProcess, page: Any) -> None:
    page.goto(guarded.url + "/")
    page.get_by_label("Admin token").fill("wrong")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("the server refused this token")


def test_the_token_opens_the_console_and_is_asked_once(guarded: ServerProcess, page: Any) -> None:
    page.goto(guarded.url + "/#/workers")
    page.get_by_label("Admin token").fill(TOKEN)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Workers")).to_be_visible()
    page.reload()
    expect(page.get_by_role("heading", name="Workers")).to_be_visible()
    page.goto(guarded.url + "/#/executions")
    expect(page.get_by_role("heading", name="Executions")).to_be_visible()


def test_signing_out_forgets_the_token(guarded: ServerProcess, page: Any) -> None:
    page.goto(guarded.url + "/")
    page.get_by_label("Admin token").fill(TOKEN)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.reload()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


def test_the_sign_in_page_has_no_serious_accessibility_violations(
    guarded: ServerProcess, page: Any, axe_source: str
) -> None:
    page.goto(guarded.url + "/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert serious_violations(page, axe_source) == []
