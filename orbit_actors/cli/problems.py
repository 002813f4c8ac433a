"""A definition's problems as a person reads them: the ``file:line:column: path: reason``
line, then the source line with a caret under what is wrong (red on a terminal)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import Final

from rich.text import Text

from ..errors import Problem
from . import output

_WORD: Final = re.compile(r"[\w$.@-]+")


def show_problems(problems: Iterable[Problem], source: str | None) -> None:
    """Print each problem on stderr, with its source line and a caret when it has a line."""
    lines = source.splitlines() if source is not None else []
    err = output.console(sys.stderr)
    for problem in problems:
        err.print(Text(str(problem)), soft_wrap=True)
        number = problem.line
        if number is not None and number == len(lines) + 1 and lines:
            # YAML points past the end for a file that stops too early: mark the end
            number, problem = len(lines), _at_end(problem, lines[-1])
        if number is not None and 1 <= number <= len(lines):
            text = lines[number - 1]
            start, width = _span(text, problem)
            gutter = f"{number:>5} | "
            err.print(Text(gutter, style="dim") + Text(text), soft_wrap=True)
            marks = Text(" " * (len(gutter) - 2) + "| ", style="dim")
            err.print(marks + Text(" " * start + "^" * width, style="bold red"), soft_wrap=True)


def _span(text: str, problem: Problem) -> tuple[int, int]:
    """Where the caret goes in ``text``: under ``near`` when the line holds it, else under
    the word at the problem's column."""
    start = max((problem.column or 1) - 1, 0)
    if problem.near:
        found = text.find(problem.near, start)
        found = found if found >= 0 else text.find(problem.near)
        if found >= 0:
            return found, len(problem.near)
    word = _WORD.match(text, start)
    return start, max(len(word.group()) if word else 1, 1)


def _at_end(problem: Problem, last: str) -> Problem:
    """The problem placed just after the last character of the file."""
    return Problem(problem.path, problem.reason, problem.file, problem.line, len(last) + 1)
