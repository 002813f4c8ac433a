"""Every page at a laptop's and a phone's width: axe-core finds nothing serious or critical, and
a screenshot of each is kept (``ORBIT_CONSOLE_SCREENSHOTS=DIR`` keeps them in DIR) for a person
to look at."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from ..e2e.harness import ServerProcess
from .conftest import (
    BROWSER_CONTEXT,
    LAPTOP,
    PHONE,
    TIMEOUT_MS,
    example_input,
    screenshot_folder,
    serious_violations,
)

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect


@pytest.fixture(scope="module")
def populated(console_server: ServerProcess) -> Iterator[dict[str, str]]:
    """Executions of every kind the pages show: running, failed with a trace, fanned out."""
    with console_server.client() as client:
        running = client.start("approval", input=example_input("approval")).execution_id
        crashed = client.start("console-crash", input={}).execution_id
        fanned = client.start("month-end", input=example_input("month_end")).execution_id
        for execution_id in (crashed, fanned):
            client.wait(execution_id, timeout=60)
        client.create_schedule("a11y", cron="*/5 * * * *", workflow="console-fan",
                               timezone="Europe/Paris", input={"items": [1]})  # fmt: skip
    yield {"running": running, "crashed": crashed, "fanned": fanned}


PAGES = {
    "executions": ("#/executions", "tbody tr a"),
    "execution-running": ("#/executions/{running}", ".graph .node"),
    "execution-failed": ("#/executions/{crashed}", "pre.trace"),
    "execution-fan-out": ("#/executions/{fanned}", ".children a"),
    "workers": ("#/workers", "tbody tr"),
    "tasks": ("#/tasks", "tbody tr"),
    "schedules": ("#/schedules", ".card"),
    "definitions": ("#/definitions", "tbody tr"),
    "definition": ("#/definitions/approval/1.0.0", "pre.yaml"),
    "servers": ("#/servers", "tbody tr"),
}


@contextmanager
def _opened(browser: Any, size: dict[str, int], url: str, ready: str) -> Iterator[Any]:
    """A page of ``size`` at ``url``, once ``ready`` (a selector) is visible."""
    context = browser.new_context(viewport=size, **BROWSER_CONTEXT)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    try:
        page.goto(url)
        expect(page.locator(ready).first).to_be_visible()
        yield page
    finally:
        context.close()


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_page_has_no_serious_accessibility_violations(
    console_server: ServerProcess, populated: dict[str, str], browser: Any, axe_source: str,
    tmp_path_factory: pytest.TempPathFactory, name: str, size: dict[str, int],
) -> None:  # fmt: skip
    fragment, ready = PAGES[name]
    context = browser.new_context(viewport=size, **BROWSER_CONTEXT)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    try:
        page.goto(f"{console_server.url}/{fragment.format(**populated)}")
        expect(page.locator(ready).first).to_be_visible()
        found = serious_violations(page, axe_source)
        width = "laptop" if size is LAPTOP else "phone"
        page.screenshot(
            path=screenshot_folder(tmp_path_factory) / f"{name}-{width}.png", full_page=True
        )
    finally:
        context.close()
    assert found == []


@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_page_fits_a_phones_width(
    console_server: ServerProcess, populated: dict[str, str], browser: Any, name: str
) -> None:
    fragment, ready = PAGES[name]
    with _opened(
        browser, PHONE, f"{console_server.url}/{fragment.format(**populated)}", ready
    ) as page:
        width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"]  # wide content scrolls inside its own box, not the page
