"""End-to-end fixtures: a real server subprocess per test, on its own SQLite file."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from pluggy import Result

from .harness import ServerProcess, WorkerProcess

ECHO3 = """
workflow: three
version: 1.0.0
tasks: {echo: {version: "1"}}
steps:
  - {id: a, task: echo, input: {n: "${input.n}"}}
  - {id: b, task: echo, input: {n: "${steps.a.output.n}"}}
  - {id: c, task: echo, input: {n: "${steps.b.output.n}"}}
output: {n: "${steps.c.output.n}"}
"""
BREAKS = """
workflow: breaks
version: 1.0.0
tasks: {fail: {version: "1"}}
steps: [{id: f, task: fail, input: {code: BROKEN}}]
"""


LOG_TAIL_LINES = 40


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Result[pytest.TestReport], None]:
    """A failed test's report carries the tail of every server and worker log it left in its
    folder, so a failure seen once (in CI) can be read afterwards."""
    outcome = yield
    report = outcome.get_result()
    folder = getattr(item, "funcargs", {}).get("tmp_path")
    if report.when != "call" or not report.failed or not isinstance(folder, Path):
        return
    for log in sorted([*folder.rglob("server.log"), *folder.rglob("worker-*.log")]):
        tail = log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
        if tail:
            report.sections.append((f"{log.relative_to(folder)} (last lines)", "\n".join(tail)))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path).start()
    yield process
    process.stop()


@pytest.fixture
def workers() -> Iterator[list[WorkerProcess]]:
    """Worker processes a test starts; all are stopped afterwards."""
    started: list[WorkerProcess] = []
    yield started
    for worker in started:
        worker.stop()
