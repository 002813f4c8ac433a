"""ORBIT_CRASH_AT names a known point and an optional positive pass count; the armed point exits
the process at exactly its n-th pass; an unset variable arms nothing."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from orbit_actors import crashpoints
from orbit_actors.crashpoints import EXIT_CODE, CrashPointError, parse

PASSES = """
from orbit_actors.crashpoints import crash_point
for n in range(1, 6):
    crash_point("group-commit")
    crash_point("result-before-ack")
    print(n, flush=True)
"""


def test_a_point_parses_with_and_without_a_count() -> None:
    assert parse("group-commit") == ("group-commit", 1)
    assert parse("result-before-ack:7") == ("result-before-ack", 7)


@pytest.mark.parametrize("value", ["nowhere", "group-commit:0", "group-commit:x", ":3"])
def test_an_unknown_point_or_a_bad_count_is_refused_naming_the_known_points(value: str) -> None:
    with pytest.raises(CrashPointError, match="ORBIT_CRASH_AT"):
        parse(value)


def test_without_the_variable_no_point_is_armed() -> None:
    assert "ORBIT_CRASH_AT" not in os.environ
    assert crashpoints.crash_point is crashpoints._nothing


def test_the_armed_point_exits_at_its_nth_pass_only() -> None:
    env = {**os.environ, "ORBIT_CRASH_AT": "result-before-ack:3"}
    done = subprocess.run([sys.executable, "-c", PASSES], env=env, capture_output=True, text=True)
    assert done.returncode == EXIT_CODE
    assert done.stdout.split() == ["1", "2"]
    assert "crash point result-before-ack reached (pass 3)" in done.stderr


def test_a_bad_value_stops_the_process_at_import_saying_why() -> None:
    env = {**os.environ, "ORBIT_CRASH_AT": "nowhere"}
    done = subprocess.run([sys.executable, "-c", PASSES], env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "unknown crash point" in done.stderr
