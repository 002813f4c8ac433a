"""The upgrade check and migration on several servers sharing one PostgreSQL: a check on one
server covers the executions every server owns (they are all in the one database), and a
migration asked of one server moves an execution another server owns (the owner carries it
out), which then goes on under the new version."""

from __future__ import annotations

import itertools
from pathlib import Path

from tests.pg import PostgresServer

from .harness import ServerProcess
from .test_upgrade import ADDED_AFTER, INSERTED_BEFORE, V1

_numbers = itertools.count()


def test_check_and_migrate_reach_the_executions_of_every_server(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    url = postgres.create_database(f"upgrade_{next(_numbers)}")
    servers = []
    for n in range(2):
        folder = tmp_path / f"s{n}"
        folder.mkdir()
        servers.append(ServerProcess(folder, "--database-url", url, "--lease-time", "2s"))
    try:
        first, second = (server.start() for server in servers)
        with first.client() as one, second.client() as two:
            one.deploy(V1)
            one.start("approve-e2e", execution_id="on-first")
            two.start("approve-e2e", execution_id="on-second")
            found = one.check("approve-e2e", "1.0.0", INSERTED_BEFORE)
            assert found.checked == 2
            assert {i.execution_id for i in found.incompatible} == {"on-first", "on-second"}
            one.deploy(ADDED_AFTER)
            moved = one.migrate("approve-e2e", "1.0.0", "1.1.0", ids=["on-second"])
            assert moved.migrated == ["on-second"]
            assert two.describe("on-second").version == "1.1.0"
            assert one.describe("on-first").version == "1.0.0"
            events = two.history("on-second").events
            assert events[-1]["type"] == "DefinitionMigrated"
    finally:
        for server in servers:
            server.stop()
