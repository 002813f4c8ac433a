"""The embedded SQLite store."""

from .schema import SCHEMA_VERSION, StoreOpenError
from .store import SqliteStore, open_sqlite_store

__all__ = ["SCHEMA_VERSION", "SqliteStore", "StoreOpenError", "open_sqlite_store"]
