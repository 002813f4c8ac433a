"""Three real servers on one PostgreSQL (shared mode), workers spread over them: one server
SIGKILLed and one SIGSTOPped under load, a command sent to a non-owner, a schedule with three
servers. Leases are short (``--lease-time 2s``); no assertion depends on how fast this machine
is, except the takeover bound the issue sets (lease time + 1 s), which only involves timers."""

from __future__ import annotations

import itertools
import json
import signal
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.pg import PostgresServer

from .harness import ServerProcess, WorkerProcess, wait_until
from .test_passivation import APPROVAL

LEASE_S = 2.0
NAP3 = """
workflow: naps
version: 1.0.0
tasks: {nap: {version: "1"}}
steps:
  - {id: a, task: nap, input: {seconds: 0.3, n: "${input.n}"}}
  - {id: b, task: nap, input: {seconds: 0.3, n: "${steps.a.output.n}"}}
  - {id: c, task: nap, input: {seconds: 0.3, n: "${steps.b.output.n}"}}
output: {n: "${steps.c.output.n}"}
"""
EXECUTIONS = 300
_numbers = itertools.count()


class Cluster:
    """Servers (not started) on one new database, each in a folder of its own."""

    def __init__(self, root: Path, url: str, count: int) -> None:
        self.url = url
        self.servers = []
        for n in range(count):
            folder = root / f"s{n}"
            folder.mkdir()
            self.servers.append(
                ServerProcess(folder, "--database-url", url, "--lease-time", f"{LEASE_S:g}s")
            )

    def sql(self, query: str, *args: object) -> list[tuple[object, ...]]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(query.encode(), args).fetchall()

    def server_id(self, server: ServerProcess) -> str:
        rows = self.sql("SELECT server_id FROM servers WHERE address = %s", server.url)
        return str(rows[0][0])

    def owns_nothing(self, server_id: str) -> bool:
        """The server is no member and owns no running execution."""
        return not self.sql(
            "SELECT 1 FROM servers WHERE server_id = %s UNION ALL SELECT 1 FROM executions "
            "WHERE status = 'running' AND owner = %s LIMIT 1", server_id, server_id,
        )  # fmt: skip


@pytest.fixture
def cluster(tmp_path: Path, postgres: PostgresServer) -> Iterator[Cluster]:
    url = postgres.create_database(f"cluster_{next(_numbers)}")
    made = Cluster(tmp_path, url, 3)
    yield made
    for server in made.servers:
        if server.process is not None and server.process.poll() is None:
            server.process.send_signal(signal.SIGCONT)
        server.stop()


def takeover_seconds(cluster: Cluster, server_id: str, since: float) -> float:
    wait_until(lambda: cluster.owns_nothing(server_id), 30, what=f"a takeover of {server_id}")
    return time.monotonic() - since


def test_three_servers_lose_two_under_load_and_every_execution_ends_once(
    cluster: Cluster, workers: list[WorkerProcess], tmp_path: Path
) -> None:
    log = tmp_path / "tasks.jsonl"
    servers = [server.start() for server in cluster.servers]
    for n, server in enumerate(servers):
        # each worker knows every server, its own first: it moves on when its server stops
        urls = ",".join(s.url for s in servers[n:] + servers[:n])
        for k in range(2):
            env = {"E2E_LOG": str(log), "ORBIT_URL": urls}
            workers.append(WorkerProcess(server, f"w{n}{k}", env=env))
    with servers[0].client() as client:
        client.deploy(NAP3)
    clients = [server.client() for server in servers]
    for n in range(EXECUTIONS):  # starts spread over the servers: the receiver owns it
        clients[n % 3].start("naps", input={"n": n}, execution_id=f"e{n}")
    killed, stopped = cluster.server_id(servers[0]), cluster.server_id(servers[1])
    assert cluster.sql("SELECT 1 FROM executions WHERE status = 'running' LIMIT 1")
    at = time.monotonic()
    servers[0].kill(signal.SIGKILL)
    servers[1].process.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
    kill_takeover = takeover_seconds(cluster, killed, at)
    stop_takeover = takeover_seconds(cluster, stopped, at)
    assert kill_takeover <= LEASE_S + 1 and stop_takeover <= LEASE_S + 1, (
        kill_takeover, stop_takeover,
    )  # fmt: skip

    survivor = clients[2]
    wait_until(
        lambda: not cluster.sql("SELECT 1 FROM executions WHERE status = 'running' LIMIT 1"),
        180, what="every execution to end",
    )  # fmt: skip
    # the paused server wakes up: its lease is gone, it writes nothing and stops
    servers[1].process.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
    assert servers[1].process.wait(timeout=30) == 1  # type: ignore[union-attr]
    assert "lease expired and another server took its executions over" in servers[1].log_text()

    statuses = Counter(row[0] for row in cluster.sql("SELECT status FROM executions"))
    assert statuses == {"completed": EXECUTIONS}
    for n in range(EXECUTIONS):
        events = survivor.history(f"e{n}").events
        resolved = Counter(e["step"] for e in events if e["type"] == "StepSucceeded")
        assert resolved == {"a": 1, "b": 1, "c": 1}, (n, resolved)
    deliveries: defaultdict[str, list[dict[str, object]]] = defaultdict(list)
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        deliveries[entry["key"]].append(entry)
    redelivered = [key for key, seen in deliveries.items() if len(seen) > 1]
    assert redelivered, "no attempt was in flight on a lost server"
    for key in redelivered:  # the same attempt again, under the same idempotency key
        assert len({entry["attempt"] for entry in deliveries[key]}) == 1, deliveries[key]
        assert any(entry["redelivery"] for entry in deliveries[key]), deliveries[key]
    for client in clients:
        client.close()


def test_a_command_sent_to_a_server_that_does_not_own_the_execution_is_answered(
    cluster: Cluster,
) -> None:
    one, two, three = (server.start() for server in cluster.servers)
    with one.client() as a, two.client() as b, three.client() as c:
        a.deploy(APPROVAL)
        a.start("approval-e2e", execution_id="asked-elsewhere")
        assert c.query("asked-elsewhere", "stage") == "waiting"  # read from the database
        assert b.signal("asked-elsewhere", "approve", {"by": "ann"}) > 0  # forwarded to a
        done = c.result("asked-elsewhere", timeout=60)  # a wait forwarded to the owner
        assert (done.status, done.output) == ("completed", {"by": "ann"})
        shown = {s.server_id: s for s in b.servers()}
        assert len(shown) == 3 and all(s.online for s in shown.values())
        assert sum(s.executions for s in shown.values()) == 0


def test_a_schedule_fires_once_per_occurrence_with_three_servers(cluster: Cluster) -> None:
    first, _, third = (server.start() for server in cluster.servers)
    with first.client() as client, third.client() as other:
        client.deploy(APPROVAL)
        client.create_schedule(
            "every-minute", "* * * * *", "approval-e2e", input={}, overlap="allow"
        )
        # every server hears of it (NOTIFY) and tries to fire each occurrence
        wait_until(lambda: [s.schedule_id for s in other.schedules()] == ["every-minute"], 30,
                   what="the schedule to reach another server")  # fmt: skip
    wait_until(
        lambda: cluster.sql("SELECT 1 FROM executions WHERE schedule_id = 'every-minute'"),
        75, what="the first occurrence",
    )  # fmt: skip
    time.sleep(3)  # time for a second server to fire it again, if it could
    fired = cluster.sql(
        "SELECT occurrence_ms, execution_id FROM schedule_claims WHERE schedule_id = %s",
        "every-minute",
    )
    started = cluster.sql("SELECT execution_id FROM executions WHERE schedule_id = %s",
                          "every-minute")  # fmt: skip
    assert len(fired) == 1 and [row[0] for row in started] == [fired[0][1]]


def test_orbit_servers_lists_every_server_sharing_the_database(cluster: Cluster) -> None:
    from .test_cli_server import orbit

    started = [server.start() for server in cluster.servers]
    shown = json.loads(orbit(started[1], "servers", "--json").stdout)["servers"]
    assert [s["address"] for s in shown] == [s.url for s in started]
    assert all(s["online"] and s["lease_until_ms"] > s["started_at_ms"] for s in shown)


def test_a_worker_on_one_server_runs_the_tasks_of_executions_another_server_owns(
    cluster: Cluster, workers: list[WorkerProcess]
) -> None:
    owner, other = cluster.servers[0].start(), cluster.servers[1].start()
    workers.append(WorkerProcess(other, "elsewhere"))  # no worker on the owner at all
    with owner.client() as client:
        client.deploy(NAP3)
        for n in range(20):
            client.start("naps", input={"n": n}, execution_id=f"q{n}")
        for n in range(20):
            done = client.result(f"q{n}", timeout=60)
            assert (done.status, done.output) == ("completed", {"n": n})
        other_id = cluster.server_id(other)
        for n in range(20):
            events = client.history(f"q{n}").events
            sessions = {e["worker_session"] for e in events if e["type"] == "StepDispatched"}
            assert all(s.startswith(f"s-{other_id}-") for s in sessions), sessions
    assert not cluster.sql("SELECT 1 FROM ready_tasks")  # every published unit was claimed


HOLD = """
workflow: holds
version: 1.0.0
tasks: {hold: {version: "1"}}
steps: [{id: h, task: hold}]
"""


def test_a_cancel_reaches_the_worker_on_another_server_that_holds_the_task(
    cluster: Cluster, workers: list[WorkerProcess], tmp_path: Path
) -> None:
    owner, other = cluster.servers[0].start(), cluster.servers[1].start()
    log = tmp_path / "tasks.jsonl"
    workers.append(WorkerProcess(other, "elsewhere", env={"E2E_LOG": str(log)}))
    with owner.client() as client:
        client.deploy(HOLD)
        client.start("holds", execution_id="held")
        wait_until(lambda: log.exists() and log.read_text().strip(), 30, what="the task to start")
        client.cancel("held", reason="not needed")
        assert client.result("held", timeout=30).status == "cancelled"
    wait_until(lambda: any(line.get("cancelled") for line in logged(log)), 30, what="the cancel")
    assert [line["worker"] for line in logged(log)] == ["elsewhere", "elsewhere"]


def logged(log: Path) -> list[dict[str, object]]:
    """The lines the e2e worker logged (a start, or a cancel)."""
    return [json.loads(line) for line in log.read_text().splitlines()]
