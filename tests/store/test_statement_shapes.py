"""A batch's statements take one of a few fixed texts, whatever its size, so the connection's
statement cache keeps them compiled; the rows they carry are exactly the batch's."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from orbit_actors.history.events import events_to_json
from orbit_actors.store import Commit
from orbit_actors.store.group import CommitWork
from orbit_actors.store.sqlite.commits import CommitBatcher
from orbit_actors.store.sqlite.schema import connect, prepare
from orbit_actors.store.sqlite.shapes import MOST_ROWS, insert_flat, pieces

from .helpers import commit


class _Recording:
    """A connection that notes the text of every statement run on it."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.texts: set[str] = set()

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        self.texts.add(sql)
        return self.conn.execute(sql, params)


def _write(conn: Any, batcher: CommitBatcher, batch: list[Commit]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    batcher.run(conn, [CommitWork(c, events_to_json(c.events)) for c in batch])
    conn.execute("COMMIT")
    batcher.settle(committed=True)


@given(st.integers(min_value=0, max_value=5 * MOST_ROWS))
def test_pieces_cover_the_rows_in_order_with_powers_of_two(total: int) -> None:
    found = list(pieces(total))
    assert [start for start, _ in found] == [
        sum(c for _, c in found[:i]) for i in range(len(found))
    ]
    assert sum(count for _, count in found) == total
    assert all(count & (count - 1) == 0 and 0 < count <= MOST_ROWS for _, count in found)
    assert [count for _, count in found] == sorted((count for _, count in found), reverse=True)


@given(st.integers(min_value=0, max_value=2 * MOST_ROWS + 3))
def test_rows_laid_end_to_end_are_inserted_whole_and_in_order(total: int) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (n INTEGER, label TEXT)")
    rows = [(n, f"row {n}") for n in range(total)]
    insert_flat(conn, "INSERT INTO t (n, label) VALUES {rows}", 2, [v for row in rows for v in row])
    assert conn.execute("SELECT n, label FROM t ORDER BY rowid").fetchall() == rows


def test_batches_of_every_size_up_to_40_run_a_few_statement_texts(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    prepare(path, "full")
    conn = _Recording(connect(path, "full", writer=True))
    batcher = CommitBatcher()
    try:
        for size in range(1, 41):
            _write(conn, batcher, [commit(f"e{size}-{i}", 1, pad=10) for i in range(size)])
            _write(conn, batcher, [commit(f"e{size}-{i}", 4, pad=10) for i in range(size)])
        # the shapes of 1, 2, 4, 8, 16 and 32 rows: the lookup, the segments, the two upserts
        assert len(conn.texts) <= 2 + 4 * 6 + 2  # (BEGIN and COMMIT, the two first ids)
        (count,) = conn.conn.execute("SELECT COUNT(*) FROM segments").fetchone()
    finally:
        conn.conn.close()
    assert count == 2 * sum(range(1, 41))


def test_a_batch_across_several_statements_writes_every_row_in_order(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    prepare(path, "full")
    conn = connect(path, "full", writer=True)
    batcher = CommitBatcher()
    try:
        # 13 rows of each kind go as 8, 4 and 1: the two commits of "a" fall in different ones
        batch = [commit("a", 1, pad=10)]
        batch += [commit(f"e{i}", 1, pad=10) for i in range(11)]
        batch += [commit("a", 4, pad=10, status="completed")]
        _write(conn, batcher, batch)
        rows = conn.execute(
            "SELECT execution_id, status, last_seq, head FROM executions"
        ).fetchall()
        segments = conn.execute("SELECT id, execution_id, first_seq, prev FROM segments").fetchall()
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()
    assert len(rows) == 12 and len(segments) == 13
    assert ("a", "completed", 6, 13) in rows
    assert segments[0] == (1, "a", 1, None) and segments[-1] == (13, "a", 4, 1)
