"""The ``orbit`` command in a real terminal (tmux) against a real server: colour on a
terminal and never with NO_COLOR, tables as wide as the terminal, shell completion; and
``orbit start --id`` of an existing id says so."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import ECHO3
from .harness import ROOT, ServerProcess
from .terminal import TMUX, Terminal

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (apt-get install tmux)")

LONG_ID = "an-execution-with-a-rather-long-identifier-0123456789-abcdefghij"


def orbit(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orbit_actors.cli", *args], capture_output=True, text=True,
        env={"ORBIT_URL": server.url, "PATH": "/usr/bin:/bin"}, cwd=ROOT, timeout=60,
    )  # fmt: skip


@pytest.fixture
def deployed(server: ServerProcess, tmp_path: Path) -> ServerProcess:
    (tmp_path / "three.yaml").write_text(ECHO3)
    assert orbit(server, "deploy", str(tmp_path / "three.yaml")).returncode == 0
    assert orbit(server, "start", "three", "--id", LONG_ID, "--input", '{"n": 1}').returncode == 0
    return server


@pytest.fixture
def terminal(deployed: ServerProcess, tmp_path: Path) -> Iterator[Terminal]:
    opened = Terminal(tmp_path, 60, {"ORBIT_URL": deployed.url})
    yield opened
    opened.close()


def test_a_terminal_shows_statuses_in_colour(terminal: Terminal) -> None:
    terminal.run("orbit list")
    screen = terminal.screen(colours=True)
    assert "\x1b[36mrunning" in screen  # cyan


def test_no_color_turns_colour_off_in_a_terminal(terminal: Terminal) -> None:
    terminal.run("NO_COLOR=1 orbit list")
    screen = terminal.screen(colours=True)
    assert "running" in screen and "\x1b[36m" not in screen


def test_a_table_is_folded_to_the_terminal_width(terminal: Terminal) -> None:
    terminal.clear()
    terminal.run("orbit list")
    lines = [line for line in terminal.screen().splitlines() if "wait-for" not in line]
    assert all(len(line) <= 60 for line in lines), lines
    assert any(line.startswith("execution") for line in lines)
    assert LONG_ID not in "\n".join(lines)  # folded over lines, not cut off or overflowing
    assert "an-execution" in lines[lines.index(next(x for x in lines if "─" in x)) + 1]


def test_bash_completes_commands_and_flags(terminal: Terminal) -> None:
    terminal.run('eval "$(orbit completion bash)"')
    terminal.type_keys("orbit sched", "Tab")
    terminal.type_keys("cre", "Tab")
    terminal.type_keys("--time", "Tab")
    terminal.finish()
    assert "orbit schedule create --timezone" in terminal.screen()


def test_starting_an_existing_id_says_so(deployed: ServerProcess) -> None:
    again = orbit(deployed, "start", "three", "--id", LONG_ID, "--input", '{"n": 2}')
    assert again.returncode == 0 and again.stdout == f"{LONG_ID}\n"
    assert again.stderr.strip() == (
        f"execution `{LONG_ID}` already exists: it was not started again and its input was "
        "not changed"
    )
    as_json = orbit(deployed, "start", "three", "--id", LONG_ID, "--json")
    assert json.loads(as_json.stdout) == {
        "execution_id": LONG_ID, "created": False, "status": None, "output": None, "error": None
    }  # fmt: skip
    first = orbit(deployed, "start", "three", "--id", "fresh-1", "--input", '{"n": 2}')
    assert first.stdout == "fresh-1\n" and first.stderr == ""
