"""The SQLite file: opening it safely, recognising it as Orbit's, and explicit, versioned
migrations. Opening refuses, with a message naming the file and what to do, a file that is not
SQLite, a SQLite database of another application, one written by a newer Orbit, or one it cannot
write — it never overwrites anything it does not recognise."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, cast

from ..base import StoreOpenError as StoreOpenError

APPLICATION_ID = 0x4F524254  # "ORBT" in the database header
Synchronous = Literal["full", "normal"]

MIGRATIONS: Sequence[Sequence[str]] = (
    # 1: definitions, executions and their histories
    (
        """CREATE TABLE definitions (
            ord INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL, version TEXT NOT NULL, definition_hash TEXT NOT NULL,
            ir TEXT NOT NULL, registered_at_ms INTEGER NOT NULL,
            UNIQUE (name, version))""",
        """CREATE TABLE executions (
            ord INTEGER PRIMARY KEY,
            execution_id TEXT NOT NULL UNIQUE,
            workflow TEXT NOT NULL, version TEXT NOT NULL, definition_hash TEXT NOT NULL,
            status TEXT NOT NULL, run INTEGER NOT NULL, last_seq INTEGER NOT NULL,
            started_at_ms INTEGER NOT NULL, closed_at_ms INTEGER,
            parent_id TEXT, schedule_id TEXT,
            head INTEGER)""",
        "CREATE INDEX executions_by_status ON executions (status, ord)",
        "CREATE INDEX executions_by_workflow ON executions (workflow, status, ord)",
        # History: an append-only log of segments (one per commit), chained per run; the
        # summary row (executions.head) or an archived run (runs.head) points at the newest.
        """CREATE TABLE segments (
            id INTEGER PRIMARY KEY, execution_id TEXT NOT NULL, run INTEGER NOT NULL,
            first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL, prev INTEGER,
            events TEXT NOT NULL)""",
        """CREATE TABLE runs (
            execution_id TEXT NOT NULL, run INTEGER NOT NULL, head INTEGER,
            last_seq INTEGER NOT NULL, PRIMARY KEY (execution_id, run)) WITHOUT ROWID""",
    ),
    # 2: workers and schedules
    (
        """CREATE TABLE workers (
            worker_id TEXT PRIMARY KEY, runtime TEXT NOT NULL, sdk TEXT NOT NULL,
            contracts TEXT NOT NULL, registered_at_ms INTEGER NOT NULL,
            last_seen_ms INTEGER NOT NULL)""",
        """CREATE TABLE schedules (
            schedule_id TEXT PRIMARY KEY, spec TEXT NOT NULL, paused INTEGER NOT NULL,
            created_at_ms INTEGER NOT NULL)""",
        """CREATE TABLE schedule_claims (
            schedule_id TEXT NOT NULL, occurrence_ms INTEGER NOT NULL, owner TEXT NOT NULL,
            claimed_at_ms INTEGER NOT NULL, execution_id TEXT,
            PRIMARY KEY (schedule_id, occurrence_ms)) WITHOUT ROWID""",
    ),
    # 3: what a schedule has settled, and why its latest occurrence did not start
    (
        "ALTER TABLE schedules ADD COLUMN settled_ms INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE schedules ADD COLUMN last_error TEXT",
    ),
    # 4: the wake-up index (passivation): when a running execution next needs deciding on its
    # own, and whether a restart must bring it back at once (NULL, as rows from before: busy)
    (
        "ALTER TABLE executions ADD COLUMN wake_at_ms INTEGER",
        "ALTER TABLE executions ADD COLUMN busy INTEGER",
    ),
    # 5: whether an operator paused an execution (operations.md, "Pause")
    ("ALTER TABLE executions ADD COLUMN paused INTEGER NOT NULL DEFAULT 0",),
    # 6: retention. Finished executions by close time (what a purge looks for) and children by
    # parent (what goes with a purged parent); the file reuses freed pages and gives back what
    # is left over (auto_vacuum = INCREMENTAL, switched on by :func:`_reuse_freed_pages`).
    (
        "CREATE INDEX executions_by_close ON executions (closed_at_ms) "
        "WHERE closed_at_ms IS NOT NULL",
        "CREATE INDEX executions_by_parent ON executions (parent_id) WHERE parent_id IS NOT NULL",
    ),
    # 7: concurrency slots (store/flow_slots.py): the executions of each key that run or wait,
    # in arrival order (ord)
    (
        """CREATE TABLE flow_slots (
            ord INTEGER PRIMARY KEY, execution_id TEXT NOT NULL UNIQUE, key TEXT NOT NULL,
            state TEXT NOT NULL)""",
        "CREATE INDEX flow_slots_by_key ON flow_slots (key, state, ord)",
    ),
    # 8: batches (store/batches.py): each batch, its progress, and the snapshot of the
    # executions it matched (with the refusal of each it could not act on)
    (
        """CREATE TABLE batches (
            ord INTEGER PRIMARY KEY, batch_id TEXT NOT NULL UNIQUE, action TEXT NOT NULL,
            filter TEXT NOT NULL, reason TEXT, state TEXT NOT NULL, matched INTEGER NOT NULL,
            done INTEGER NOT NULL, failed INTEGER NOT NULL, position INTEGER NOT NULL,
            doubt_until INTEGER NOT NULL, owner TEXT, created_at_ms INTEGER NOT NULL,
            closed_at_ms INTEGER)""",
        """CREATE TABLE batch_items (
            batch_id TEXT NOT NULL, position INTEGER NOT NULL, execution_id TEXT NOT NULL,
            run INTEGER NOT NULL, code TEXT, message TEXT,
            PRIMARY KEY (batch_id, position)) WITHOUT ROWID""",
    ),
    # 9: rate limits (store/rate_log.py): each recent dispatch of a rate-limited task, by
    # (task, key) and instant, and by when it may be deleted
    (
        """CREATE TABLE rate_log (
            task TEXT NOT NULL, key TEXT NOT NULL, at_ms INTEGER NOT NULL,
            expires_ms INTEGER NOT NULL)""",
        "CREATE INDEX rate_log_by_key ON rate_log (task, key, at_ms)",
        "CREATE INDEX rate_log_by_expiry ON rate_log (expires_ms)",
    ),
    # 10: a slot given back is kept a minute with its instant (store/flow_slots.py): a start
    # stamped before it was given back counts it as still taken
    ("ALTER TABLE flow_slots ADD COLUMN freed_at_ms INTEGER",),
)
INCREMENTAL = 2  # PRAGMA auto_vacuum
SCHEMA_VERSION = len(MIGRATIONS)


BUSY_TIMEOUT_MS = 30_000
"""How long a connection waits for a lock another holds (the writer's, a checkpoint's)."""
JOURNAL_SIZE_LIMIT = 4 * 1024 * 1024
"""The size the WAL is cut back to when a checkpoint starts it again (SQLite keeps a WAL at its
largest otherwise): about the 1,000 pages of its bound (:data:`.checkpoints.WAL_BOUND`)."""


# sqlite3 binds only exact int, float, str and bytes without asking its adapters; every other
# value (None, a bool) costs two failed attribute look-ups (``__adapt__``, ``__conform__``),
# ~3,300 instructions, about 24 per execution in the writer's rows. An adapter found for None
# in the table answers it at a third of that (a C call, no Python frame); it gives None back,
# which is bound as NULL exactly as before. The bools of a row are bound as ints (commits.py).
sqlite3.register_adapter(type(None), cast("Callable[[None], None]", {}.get))


def connect(path: Path, synchronous: Synchronous, *, writer: bool) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, the asked durability."""
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=writer, timeout=BUSY_TIMEOUT_MS / 1000
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}")
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise StoreOpenError(
            f"{path}: cannot switch the database to WAL mode (it is in {mode} mode)"
        )
    level = {"full": 2, "normal": 1}[synchronous]
    conn.execute(f"PRAGMA synchronous = {level}")
    if conn.execute("PRAGMA synchronous").fetchone()[0] != level:
        raise StoreOpenError(f"{path}: SQLite refused synchronous={synchronous.upper()}")
    return conn


def prepare(path: Path, synchronous: Synchronous) -> None:
    """Check the file is Orbit's (or new) and migrate it to :data:`SCHEMA_VERSION`."""
    if path.exists() and path.is_dir():
        raise StoreOpenError(f"{path} is a directory; give --db the path of a database file")
    try:
        conn = connect(path, synchronous, writer=True)
    except sqlite3.DatabaseError as exc:
        raise _explain(path, exc) from None
    try:
        _migrate(path, conn)
    except sqlite3.DatabaseError as exc:
        raise _explain(path, exc) from None
    finally:
        conn.close()


def _migrate(path: Path, conn: sqlite3.Connection) -> None:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if app_id != APPLICATION_ID and tables:
        shown = ", ".join(sorted(t for t in tables if not t.startswith("sqlite_"))[:5])
        raise StoreOpenError(
            f"{path} is a SQLite database of another application (tables: {shown}); Orbit will "
            "not touch it: point --db at a new file or at an Orbit database"
        )
    if version > SCHEMA_VERSION:
        raise StoreOpenError(
            f"{path} was written by a newer Orbit (schema version {version}; this Orbit knows up "
            f"to {SCHEMA_VERSION}): upgrade Orbit to open it"
        )
    for number in range(version + 1, SCHEMA_VERSION + 1):
        apply_migration(conn, number)
    _reuse_freed_pages(conn)


def _reuse_freed_pages(conn: sqlite3.Connection) -> None:
    """Switch the file to ``auto_vacuum = INCREMENTAL`` once. SQLite applies the change only
    by rewriting the file (``VACUUM``): instant for a new file, once for a file from an older
    Orbit (as long as copying it takes)."""
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] != INCREMENTAL:
        conn.execute(f"PRAGMA auto_vacuum = {INCREMENTAL}")
        conn.execute("VACUUM")


def apply_migration(conn: sqlite3.Connection, number: int) -> None:
    """Apply migration ``number`` (1-based) and record it, in one transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in MIGRATIONS[number - 1]:
            conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {number}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _explain(path: Path, exc: sqlite3.DatabaseError) -> StoreOpenError:
    text = str(exc)
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return StoreOpenError(
            f"{path} cannot be written ({text}): Orbit needs to write it and its -wal and -shm "
            "files beside it; fix the permissions or point --db elsewhere"
        )
    if "not a database" in text or "malformed" in text:
        return StoreOpenError(
            f"{path} is not a usable SQLite database ({text}); Orbit will not overwrite it: "
            "point --db at a new file, or restore this one from a backup"
        )
    return StoreOpenError(f"{path} cannot be opened: {text}")
