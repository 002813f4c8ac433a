"""What ``orbit`` prints for people: relative times, tables fitted to the width, colour only
when asked for by a terminal and never with NO_COLOR."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.text import Text

from orbit_actors.cli import output

GOLDEN = Path(__file__).parent / "golden"
NOW = 1_780_000_000_000


@pytest.mark.parametrize(
    ("ago_ms", "shown"),
    [(0, "just now"), (400, "just now"), (1_000, "1 s ago"), (59_000, "59 s ago"),
     (60_000, "1 min ago"), (3 * 60_000 + 59_000, "3 min ago"), (2 * 3_600_000, "2 h ago"),
     (3 * 86_400_000, "3 d ago"), (-90_000, "in 1 min"), (-5 * 3_600_000, "in 5 h")],
)  # fmt: skip
def test_times_are_relative_to_now(ago_ms: int, shown: str) -> None:
    assert output.relative(NOW - ago_ms, NOW) == shown


def test_a_time_beyond_a_month_is_a_date() -> None:
    assert output.relative(NOW - 40 * 86_400_000, NOW) == "2026-04-18 20:26 UTC"
    assert output.relative(None, NOW) == ""


ROWS = [
    ["order-2f1c9a7e-5b1d-4e8a-9a8e-0c3d2b1a0f99", "order-saga@1.0.0", Text("completed"),
     "3 min ago", "2 min ago"],
    ["nightly-report-2026-12-03", "report@2.1.0", Text("failed"), "2 h ago", "1 h ago"],
]  # fmt: skip
HEADER = ["execution", "workflow", "status", "started", "closed"]


@pytest.mark.parametrize("columns", [40, 60, 120])
def test_a_table_fits_the_width_of_the_terminal(
    columns: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    output.table(HEADER, ROWS)
    shown = capsys.readouterr().out
    assert max(len(line) for line in shown.splitlines()) <= columns
    assert shown == (GOLDEN / f"table-{columns}.txt").read_text()


def test_a_piped_table_is_never_folded(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    output.table(HEADER, ROWS)
    assert "order-2f1c9a7e-5b1d-4e8a-9a8e-0c3d2b1a0f99" in capsys.readouterr().out


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_colour_unless_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    terminal = _Terminal()
    output.console(terminal).print(output.status_word("failed"))
    assert "\x1b[31mfailed" in terminal.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    plain = _Terminal()
    output.console(plain).print(output.status_word("failed"))
    assert plain.getvalue() == "failed\n"


def test_a_pipe_gets_no_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    piped = io.StringIO()
    output.console(piped).print(output.status_word("failed"))
    assert piped.getvalue() == "failed\n"


def test_an_empty_table_says_none(capsys: pytest.CaptureFixture[str]) -> None:
    output.table(HEADER, [])
    assert capsys.readouterr().out == "(none)\n"
