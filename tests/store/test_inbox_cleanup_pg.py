"""A takeover deletes the inbox messages that were taken but whose sender is gone (nobody
would ever collect their answers), and keeps those not taken yet: they are still carried out
(an offer among them holds a unit of the shared queue)."""

from __future__ import annotations

import itertools

import pytest

from orbit_actors.store.postgres import membership as sql
from orbit_actors.store.postgres.schema import connect, prepare
from tests.pg import PostgresServer

_numbers = itertools.count()


@pytest.fixture
def url(postgres: PostgresServer) -> str:
    found = postgres.create_database(f"inbox_{next(_numbers)}")
    prepare(found)
    return found


def test_a_takeover_deletes_the_taken_messages_of_a_dead_sender_only(url: str) -> None:
    with connect(url, autocommit=True) as conn:
        dead = sql.join(conn, "dead", "http://dead", 60_000)
        alive = sql.join(conn, "alive", "http://alive", 60_000)
        survivor = sql.join(conn, "survivor", "http://survivor", 60_000)
        sql.send(conn, "answered", alive, dead, "x1", "{}")
        sql.send(conn, "taken", alive, dead, "x2", "{}")
        sql.send(conn, "not-taken", alive, dead, "x3", "{}")
        sql.send(conn, "from-alive", survivor, alive, "x4", "{}")
        answered = sql.take(conn, "answered", alive)
        assert answered is not None
        sql.answer(conn, answered, "{}")
        assert sql.take(conn, "taken", alive) is not None
        assert sql.take(conn, "from-alive", survivor) is not None
        sql.leave(conn, dead)

        sql.take_over(conn, "survivor", survivor, orphans=False)

        left = {row[0] for row in conn.execute("SELECT message_id FROM inbox").fetchall()}
        assert left == {"not-taken", "from-alive"}
        assert sql.take(conn, "not-taken", alive) is not None  # still carried out
