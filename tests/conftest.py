"""Shared helpers: definitions are written as YAML in the tests, as a user would write them."""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Iterator

import pytest

from orbit_actors.ir import CompiledDefinition, compile_source
from orbit_actors.testing import Driver

from .pg import UNAVAILABLE, PostgresServer, start_postgres

HEADER = """
workflow: {name}
version: 1.0.0
tasks:
  t: {{version: "1"}}
  t2: {{version: "1"}}
  undo: {{version: "1"}}
  py: {{version: "1", language: python}}
"""


def definition(body: str, name: str = "wf") -> CompiledDefinition:
    """Compile a definition: the standard header (tasks t, t2, undo, and py for language python) plus ``body``."""
    return compile_source(HEADER.format(name=name) + textwrap.dedent(body))


def driver(body: str, input: object = None, **kwargs: object) -> Driver:
    """A started :class:`Driver` of ``definition(body)``."""
    return Driver(definition(body), **kwargs).start(input)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL server for the session (tests skip, saying why, without one)."""
    server = start_postgres()
    if server is None:
        pytest.skip(f"no PostgreSQL to test on: {UNAVAILABLE[0]}")
    yield server
    server.stop()


CLOCKS = ("autojump_clock", "mock_clock")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """pytest-trio runs a test under a MockClock only when the test itself names the clock
    fixture: one that gets it through another fixture alone runs in real time (its
    ``trio.sleep(60)`` takes a minute). Such tests stop the run at once, named."""
    wrong = [
        f"{item.nodeid} (add the argument `{clock}: MockClock`)"
        for item in items
        if isinstance(item, pytest.Function)
        for clock in CLOCKS
        if clock in item.fixturenames and clock not in inspect.signature(item.function).parameters
    ]
    if wrong:
        raise pytest.UsageError(
            "these tests get a MockClock only through a fixture, so they would run in real "
            "time:\n  " + "\n  ".join(wrong)
        )
