"""Multi-row statements of a few fixed shapes. A batch sends its rows of one kind in as few
statements as it can (one step of SQLite each, so the writer thread gives up and takes back the
GIL a few times per batch, not once per row), but a text written for exactly the batch's count of
rows differs from batch to batch: SQLite parsed it every time, and the connection's statement
cache, keyed by the text, never kept it (~35,000 instructions per commit in a burst of the real
server). Cut into powers of two, the rows take one of a few texts per kind, compiled once."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator
from itertools import chain
from typing import Any

MOST_ROWS = 512
"""The most rows one statement carries: 512 summary rows bind 8,192 parameters, well below
SQLite's limit of 32,766; a larger batch takes a few statements more."""


def pieces(total: int) -> Iterator[tuple[int, int]]:
    """``(start, count)`` of the statements that carry ``total`` rows: each count a power of
    two up to :data:`MOST_ROWS`, the largest first (13 rows: 8, 4, 1). Each statement more
    costs ~15,000 instructions, far less than parsing a new text."""
    start = 0
    while start < total:
        count = min(1 << ((total - start).bit_length() - 1), MOST_ROWS)
        yield start, count
        start += count


def insert_rows(conn: sqlite3.Connection, template: str, rows: list[tuple[Any, ...]]) -> None:
    """Run ``template`` (with ``{rows}`` for the VALUES list) for all ``rows``, in the few
    statements :func:`pieces` cuts them into."""
    if not rows:
        return
    width = len(rows[0])
    for start, count in pieces(len(rows)):
        # flattened in C: a comprehension cost ~1,500 instructions a commit more
        values = list(chain.from_iterable(rows[start : start + count]))
        conn.execute(values_statement(template, width, count), values)


@functools.lru_cache(maxsize=128)
def values_statement(template: str, width: int, count: int) -> str:
    """``template`` with its ``{rows}`` as ``count`` rows of ``width`` placeholders."""
    placeholder = "(" + ", ".join("?" * width) + ")"
    return template.format(rows=", ".join([placeholder] * count))
