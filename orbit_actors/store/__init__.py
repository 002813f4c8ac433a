"""Stores: the ``Store`` contract, and its SQLite implementation (the default); PostgreSQL is
:mod:`.postgres` (an optional extra, so not imported here)."""

from .base import (
    EXECUTION_STATUSES,
    TERMINAL_STATUSES,
    AlreadyStored,
    Commit,
    DefinitionRecord,
    ExecutionPage,
    ExecutionRow,
    PutDefinition,
    PutOutcome,
    ScheduleRecord,
    Store,
    StoreStatistics,
    WorkerRecord,
)
from .sqlite import SqliteStore, StoreOpenError, open_sqlite_store

__all__ = [
    "EXECUTION_STATUSES",
    "TERMINAL_STATUSES",
    "AlreadyStored",
    "Commit",
    "DefinitionRecord",
    "ExecutionPage",
    "ExecutionRow",
    "PutDefinition",
    "PutOutcome",
    "ScheduleRecord",
    "SqliteStore",
    "Store",
    "StoreOpenError",
    "StoreStatistics",
    "WorkerRecord",
    "open_sqlite_store",
]
