"""End-to-end fixtures: a real server subprocess per test, on its own SQLite file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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
