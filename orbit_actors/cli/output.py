"""What ``orbit`` prints for people: rich tables that fit the terminal, statuses in colour,
relative times. Colour only on a terminal, never with ``NO_COLOR`` (rich reads both, and
``FORCE_COLOR``). ``--json`` output never comes through here: it is printed as it was."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final, TextIO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

# A piped table is read by grep and people alike: never fold it to a made-up 80 columns.
PIPE_WIDTH: Final = 1000

STATUS_STYLES: Final = {
    "completed": "green", "succeeded": "green", "online": "green", "active": "green",
    "created": "green", "resumed": "green",
    "failed": "red", "timed_out": "red", "terminated": "red", "offline": "dim", "expired": "dim",
    "cancelled": "yellow", "compensated": "yellow", "paused": "yellow", "quarantined": "red",
    "running": "cyan", "scheduled": "cyan", "dispatched": "cyan", "waiting": "cyan",
    "pending": "dim", "skipped": "dim", "not run": "dim", "unchanged": "dim", "ok": "green",
}  # fmt: skip


def console(stream: TextIO | None = None) -> Console:
    """A console on ``stream`` (stdout by default) sized to the terminal, or wide when piped."""
    file = stream or sys.stdout
    width = None if _is_terminal(file) or os.environ.get("COLUMNS") else PIPE_WIDTH
    return Console(file=file, width=width, highlight=False, soft_wrap=False)


def _is_terminal(file: TextIO) -> bool:
    isatty = getattr(file, "isatty", None)
    return bool(isatty and isatty())


def status_word(word: str, width: int = 0) -> Text:
    """A status word in its colour, padded to ``width``."""
    return Text(word.ljust(width), style=STATUS_STYLES.get(word, ""))


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Print rows under a header, columns fitted to the terminal (long cells fold)."""
    out = console()
    if not rows:
        out.print("(none)", style="dim")
        return
    grid = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for name in header:
        grid.add_column(name, overflow="fold")
    for row in rows:
        grid.add_row(*(cell if isinstance(cell, Text) else Text(str(cell)) for cell in row))
    out.print(grid)


def line(*parts: str | Text) -> None:
    """Print one line made of plain and styled parts, separated by two spaces."""
    text = Text("  ").join(part if isinstance(part, Text) else Text(part) for part in parts)
    console().print(text, soft_wrap=True)


def error(message: str) -> None:
    """Print ``error: message`` on stderr (``error:`` in red on a terminal)."""
    console(sys.stderr).print(Text.assemble(("error:", "bold red"), " ", message), soft_wrap=True)


def note(message: str) -> None:
    """Print a remark on stderr (not part of what a script reads on stdout)."""
    console(sys.stderr).print(Text(message, style="yellow"), soft_wrap=True)


def relative(ms: int | None, now_ms: int | None = None) -> str:
    """``ms`` (epoch milliseconds) as "3 min ago" or "in 2 h"; a date beyond a month."""
    if ms is None:
        return ""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    seconds = (now - ms) / 1000
    amount = _amount(abs(seconds))
    if amount is None:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
    if amount == "now":
        return "just now"
    return f"{amount} ago" if seconds > 0 else f"in {amount}"


def _amount(seconds: float) -> str | None:
    """A duration in its largest whole unit; None beyond 30 days."""
    for limit, size, unit in _UNITS:
        if seconds < limit:
            return "now" if size == 0 else f"{int(seconds // size)} {unit}"
    return None


_UNITS: Final = (
    (1, 0, ""),
    (60, 1, "s"),
    (3600, 60, "min"),
    (86400, 3600, "h"),
    (30 * 86400, 86400, "d"),
)


def absolute(ms: int) -> str:
    """``ms`` (epoch milliseconds) as a UTC date and time."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
