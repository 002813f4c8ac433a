"""Fixtures of the console's browser tests: Debian's chromium driven by Playwright, a real
server subprocess with the examples deployed and their worker running, and axe-core.

Where chromium or Playwright is missing (a machine without root), the browser tests skip and
say why; CI installs both (``.ci/run``), so they run there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orbit_actors.cli import deploy_paths

from ..e2e.harness import ROOT, ServerProcess, WorkerProcess, wait_until

CHROMIUM = os.environ.get("ORBIT_CHROMIUM", "/usr/bin/chromium")
# Chromium must not reach for the (closed) network: no QUIC, updates, sync or first-run calls.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]  # fmt: skip
AXE_DIR = ROOT / ".cache" / "npm"
AXE_JS = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
BROWSER_CONTEXT = {"locale": "en-US", "timezone_id": "UTC"}  # what the pages print is checked
TIMEOUT_MS = 20_000  # generous: a shared 2-core machine runs other tests at the same time
EXAMPLES = ROOT / "examples"
CONSOLE_DEFINITIONS = """
workflow: console-fan
version: 1.0.0
tasks: {console.echo: {version: "1"}}
steps:
  - {id: first, task: console.echo, input: {n: 0}}
  - {id: each, for: input.items, task: console.echo, input: {item: "${item}"}}
  - {id: last, task: console.echo, input: {n: "${size(steps.each.output)}"}}
---
workflow: console-crash
version: 1.0.0
tasks: {console.crash: {version: "1"}}
retry: {max_attempts: 1}
steps: [{id: boom, task: console.crash, input: {what: the console}}]
---
workflow: console-saga
version: 1.0.0
tasks: {console.echo: {version: "1"}, console.crash: {version: "1"}}
retry: {max_attempts: 2, initial_interval: 100ms}
steps:
  - id: book
    task: console.echo
    input: {n: 1}
    compensate: {task: console.echo, input: {undo: 1}}
  - {id: boom, task: console.crash, input: {what: the saga}}
---
workflow: console-later
version: 1.0.0
signals: {go: {type: object}}
steps: [{id: nap, sleep: 1h}, {id: wait, await: go}]
"""


TOKEN = "console-admin-token"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server behind ``--admin-token TOKEN``."""
    server = ServerProcess(tmp_path_factory.mktemp("guarded"), "--admin-token", TOKEN).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """A headless Debian chromium (skips when it or Playwright is not installed)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium, as .ci/run does)")
    sync_api.expect.set_options(timeout=TIMEOUT_MS)
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe-core's script, installed from the npm registry into .cache/ when missing."""
    if not AXE_JS.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("axe-core is not installed and there is no npm to install it")
        subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix",
                        str(AXE_DIR), "axe-core@4"], check=True, timeout=300)  # fmt: skip
    return AXE_JS.read_text()


def _deploy_all(server: ServerProcess, token: str | None = None) -> None:
    with server.client(token) as client:
        deploy_paths(client, sorted(EXAMPLES.glob("*.yaml")), quiet=True)
        for source in CONSOLE_DEFINITIONS.split("---"):
            client.deploy(source)


@pytest.fixture(scope="module")
def console_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server with the examples and the console's workflows deployed and both workers on."""
    server = ServerProcess(tmp_path_factory.mktemp("console")).start()
    workers = [WorkerProcess(server, "examples", target="examples.workers:worker"),
               WorkerProcess(server, "console-tests", target="tests.console.console_workers:worker")]  # fmt: skip
    _deploy_all(server)
    with server.client() as client:
        wait_until(lambda: sum(w.online for w in client.workers()) == 2, what="both workers")
    yield server
    for worker in workers:
        worker.stop()
    server.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh laptop-sized page (its own storage) that fails the test on a script error."""
    context = browser.new_context(viewport=LAPTOP, **BROWSER_CONTEXT)
    context.set_default_timeout(TIMEOUT_MS)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on("console", lambda message: _note_policy(message.text, errors))
    yield opened
    context.close()
    assert not errors, f"script errors on the page: {errors}"


def _note_policy(text: str, errors: list[str]) -> None:
    if "Content Security Policy" in text:  # the page broke its own policy (say, an inline style)
        errors.append(text)


def example_input(name: str) -> Any:
    """The input file of an example."""
    return json.loads((EXAMPLES / "inputs" / f"{name}.json").read_text())


def serious_violations(page: Any, axe_source: str) -> list[str]:
    """axe-core's serious and critical findings on the page as it is now (WCAG 2 A and AA)."""
    page.evaluate(
        axe_source
    )  # evaluated by the test: the page's own policy allows no inline script
    found = page.evaluate(
        """async () => (await axe.run(document, {runOnly: ["wcag2a", "wcag2aa", "best-practice"]}))
             .violations.filter((v) => v.impact === "serious" || v.impact === "critical")
             .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`)"""
    )
    return list(found)


def screenshot_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where page screenshots go: $ORBIT_CONSOLE_SCREENSHOTS, or a temporary folder."""
    wanted = os.environ.get("ORBIT_CONSOLE_SCREENSHOTS")
    folder = Path(wanted) if wanted else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
