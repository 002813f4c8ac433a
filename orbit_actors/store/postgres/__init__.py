"""The PostgreSQL store (``pip install 'orbit-actors[postgres]'``): the database several servers
can share, reached with psycopg 3 in trio threads."""

from .schema import SCHEMA_VERSION, describe
from .store import PostgresStore, open_postgres_store

__all__ = ["SCHEMA_VERSION", "PostgresStore", "describe", "open_postgres_store"]
