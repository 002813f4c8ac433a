"""Checkpoints off the commit path.

A checkpoint copies the pages the WAL holds into the database file and syncs it; once every frame
is copied, the next writing transaction starts the WAL again from its beginning. SQLite's
automatic checkpoint does it inside the commit that takes the WAL past 1,000 pages, before
``COMMIT`` returns: 1.4 to 2.5 ms more for about 2 commits in 100 of a server one execution at a
time. The writer's connection has it switched off (``wal_autocheckpoint = 0``); a
:class:`Checkpointer` with its own connection and thread runs ``PASSIVE`` checkpoints instead.
Those never wait for the writer or for a reader (they copy what no reader's snapshot still needs),
and they are as safe against a crash or a power cut as SQLite's own: the WAL is synced before
anything is copied, and it is never started again before the database file is synced. The
durability of a commit is the WAL's fsync at ``COMMIT``, which this does not touch.

**When.** The writer counts the rows it has committed (sqlite3's ``total_changes``, a proxy for
the pages it wrote) and wakes the checkpointer every :data:`CHECKPOINT_ROWS`. The WAL starts
again only when a writing transaction begins with every frame copied; frames arrive while a
checkpoint copies, so one checkpoint rarely gets there. Once the WAL holds :data:`CHASE_FRAMES`
or more, the writer wakes the checkpointer after every commit: a pass right after a commit
copies only that commit's frames, and is usually done before the next transaction begins (the
answer, a worker's round trip), which then starts the WAL again. A writer that gives it no such
moment would have it chase for nothing: it gives up after :data:`CHASES` rounds until the WAL
starts again.

**The bound.** A writer that is never idle (a burst) never lets a pass get there, and the WAL
would grow without limit. When a pass finds :data:`WAL_BOUND` frames or more, it asks the writer
to checkpoint itself before its next transaction (``wal_checkpoint(RESTART)``: nobody else
writes, so it copies the few frames left and waits for the readers of old frames; the next
transaction starts the WAL from its beginning). The wait for readers is cut at
:data:`RESTART_WAIT_MS` (a long read must not hold the commits up; the next pass asks again).
Meanwhile the checkpointer does nothing, so the two never wait for each other. The bound is
SQLite's own automatic checkpoint's, so the WAL file reaches the size it did before (an fsync of
a WAL that grows writes the file's new size too, and costs twice one that overwrites).

**The backstop.** Rows stand for pages only roughly: a row of a 2 MiB payload writes 500 pages,
a reclaim (``incremental_vacuum``) moves pages and changes no row, and a checkpointer that
fails (an I/O error) or died finds nothing at all. So the writer's connection keeps SQLite's
automatic checkpoint at :data:`WAL_BACKSTOP` frames, four times the bound, which the scheme
above never lets the WAL reach: past it, each commit runs a PASSIVE checkpoint inside itself
(as SQLite did at 1,000 before), and the WAL stays bounded whatever wakes or fails.

**The WAL-reset bug.** SQLite 3.7.0 to 3.51.2 has a race that can lose committed transactions
or corrupt the file when two connections write or checkpoint the same WAL at once: a checkpoint
that starts just after another completed misses the WAL being started again by a commit of
another connection (https://sqlite.org/wal.html#walresetbug; fixed in 3.51.3, backported to
3.44.6 and 3.50.7). A checkpointer beside the writer is exactly that, and its passes after each
commit are its timing. With a SQLite that has the bug (:func:`wal_reset_fixed`), the store runs
no checkpointer: the writer's connection, the only one that writes, checkpoints itself inside
its commits as SQLite does by default (every 1,000 frames).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("orbit.store")

CHECKPOINT_ROWS = 250
"""Rows committed between two checkpoints: about 500 WAL pages one execution at a time, fewer
in a burst (many rows of a batch share a page)."""
CHASE_FRAMES = 256
"""WAL frames from which the checkpointer runs after every commit until the WAL starts again."""
WAL_BOUND = 1000
"""WAL frames (4 MB of 4 KB pages, SQLite's automatic checkpoint's threshold) at which the
writer checkpoints itself."""
CHASES = 8
"""Rounds after commits the checkpointer tries, per start of the WAL, to let it start again."""
PASSES = 4
"""Checkpoints in a row while the writer adds frames behind them (each pass copies fewer)."""
WAL_BACKSTOP = 4 * WAL_BOUND
"""WAL frames from which the writer's commits checkpoint themselves (SQLite's automatic
checkpoint, ``wal_autocheckpoint``), whatever the checkpointer does; 0: never."""
RESTART_WAIT_MS = 20
"""How long the writer's own checkpoint waits for readers of old frames."""


def wal_reset_fixed(version: tuple[int, ...]) -> bool:
    """True when SQLite ``version`` (``sqlite3.sqlite_version_info``) has the WAL-reset bug
    fixed: 3.51.3 on, or the backports 3.50.7 and 3.44.6 in their own lines."""
    return (
        version >= (3, 51, 3) or (3, 50, 7) <= version < (3, 51) or (3, 44, 6) <= version < (3, 45)
    )


@dataclass
class CheckpointStatistics:
    """What the checkpointer did: checkpoints begun (each of up to :data:`PASSES` passes), times
    the writer checkpointed itself at the bound, and the most frames a pass found in the WAL."""

    checkpoints: int = 0
    restarts: int = 0
    largest_wal: int = 0


class Checkpointer:
    """Runs PASSIVE checkpoints on its own connection (made by ``connect``) and thread, when
    the writer says enough was committed (:meth:`committed`). Start with :meth:`start`, stop
    with :meth:`stop`."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        every_rows: int = CHECKPOINT_ROWS,
        bound: int = WAL_BOUND,
        chase: int = CHASE_FRAMES,
        backstop: int = WAL_BACKSTOP,
    ) -> None:
        self._connect = connect
        self._conn: sqlite3.Connection | None = None
        self._every = every_rows
        self._bound = bound
        self._chase = chase
        self.backstop = backstop  # the writer's wal_autocheckpoint
        self._chasing = False  # woken after every commit until the WAL starts again
        self._chases_left = CHASES
        self._due_at = every_rows  # the writer's total_changes that wakes the next checkpoint
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(
            target=self._run, name="orbit-store-checkpointer", daemon=True
        )
        self.restart_due = False  # set here; taken by the writer before its next transaction
        self.stats = CheckpointStatistics()

    def start(self) -> None:
        """Open the connection (raises when it cannot) and start the thread (blocks)."""
        self._conn = self._connect()
        self._thread.start()

    def stop(self) -> None:
        """Let a checkpoint under way finish, end the thread, close the connection (blocks)."""
        self._stopping = True
        self._wake.set()
        if self._thread.ident is not None:
            self._thread.join()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def committed(self, changes: int) -> None:
        """On the writer's thread, after each commit: ``changes`` rows committed in all."""
        if changes >= self._due_at or self._chasing:
            self._due_at = changes + self._every
            self._wake.set()

    def restarted(self) -> None:
        """The writer took :attr:`restart_due` and checkpointed itself."""
        self.restart_due = False
        self.stats.restarts += 1

    def _run(self) -> None:
        conn = self._conn
        assert conn is not None
        while not self._stopping:
            self._wake.wait()
            self._wake.clear()
            if not (self._stopping or self.restart_due):  # (else the writer's turn)
                self._checkpoint(conn)

    def _chase_or_not(self, frames: int) -> None:
        """Chase the WAL found at ``frames`` (wake after every commit), CHASES rounds at most."""
        if frames < self._chase:
            self._chasing, self._chases_left = False, CHASES
        elif self._chasing or self._chases_left == CHASES:
            self._chases_left -= 1  # (the rounds of one start of the WAL)
            self._chasing = self._chases_left > 0

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        stats = self.stats
        stats.checkpoints += 1
        try:
            frames = self._passes(conn)
        except sqlite3.Error as exc:  # a full disk, say: the next one tries again
            log.warning("a checkpoint of the WAL failed: %s", exc)
            self._chasing = False  # (not after every commit: a warning for each)
            return
        stats.largest_wal = max(stats.largest_wal, frames)
        self._chase_or_not(frames)
        if frames >= self._bound:
            self.restart_due = True  # the writer's turn

    def _passes(self, conn: sqlite3.Connection) -> int:
        """Pass after pass while the writer adds frames behind, until caught up, stopped by a
        reader's snapshot, or the WAL found at its bound; the frames the last pass found."""
        seen = -1
        for _ in range(PASSES):
            busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if frames >= self._bound or busy or copied < frames or frames == seen:
                break
            seen = frames
        return int(frames)
