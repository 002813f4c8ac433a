"""Shared helpers: definitions are written as YAML in the tests, as a user would write them."""

from __future__ import annotations

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
