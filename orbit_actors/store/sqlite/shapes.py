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
    if rows:
        insert_flat(conn, template, len(rows[0]), list(chain.from_iterable(rows)))


def insert_flat(conn: sqlite3.Connection, template: str, width: int, values: list[Any]) -> None:
    """:func:`insert_rows` for rows of ``width`` values laid end to end in one list, as a
    batch builds them (``values.extend(row)``): slicing that list is a copy in C, where
    flattening a list of tuples cost ~80 instructions per value (~7,000 per execution)."""
    total = len(values) // width
    if total == 0:
        return
    if total & (total - 1) == 0 and total <= MOST_ROWS:  # one statement takes them all
        conn.execute(values_statement(template, width, total), values)
        return
    for start, count in pieces(total):
        piece = values[start * width : (start + count) * width]
        conn.execute(values_statement(template, width, count), piece)


@functools.lru_cache(maxsize=128)
def values_statement(template: str, width: int, count: int) -> str:
    """``template`` with its ``{rows}`` as ``count`` rows of ``width`` placeholders."""
    placeholder = "(" + ", ".join("?" * width) + ")"
    return template.format(rows=", ".join([placeholder] * count))
