"""Concurrency keys and rate limits end to end, on SQLite and on three servers sharing
PostgreSQL, with real worker subprocesses: 20 keys x 50 executions with ``limit: 2`` never have
more than 2 running per key at any instant (from each history's WorkflowStarted to its end),
every one of them ends, and ``skip`` and ``replace`` behave as specified; a rate limit of 10 a
second is never exceeded in any second (from the histories' StepDispatched), whichever server
dispatches."""

from __future__ import annotations

import itertools
import signal
import threading
from collections import defaultdict
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from orbit_actors.client import ApiError, Client
from tests.pg import PostgresServer
from tests.rate_spans import most_in_any_span

from .harness import ServerProcess, WorkerProcess, wait_until

KEYS, PER_KEY, LIMIT = 20, 50, 2
KEYED = """
workflow: keyed
version: 1.0.0
input: {type: object, properties: {customer: {type: string}, n: {type: integer}}}
flow: {concurrency: {key: '${input.customer}', limit: 2, on_full: queue}}
tasks: {nap: {version: "1"}}
steps: [{id: a, task: nap, input: {seconds: 0.2, n: "${input.n}"}}]
"""
SINGLE = """
workflow: single
version: 1.0.0
input: {type: object, properties: {customer: {type: string}}}
flow: {concurrency: {key: '${input.customer}', limit: 1, on_full: ON_FULL}}
signals: {done: null}
steps: [{id: wait, await: done}]
"""
_numbers = itertools.count()


def servers_on(kind: str, tmp_path: Path, postgres: PostgresServer | None) -> list[ServerProcess]:
    if kind == "sqlite":
        return [ServerProcess(tmp_path).start()]
    assert postgres is not None
    url = postgres.create_database(f"flow_{next(_numbers)}")
    found = []
    for n in range(3):
        folder = tmp_path / f"s{n}"
        folder.mkdir()
        found.append(ServerProcess(folder, "--database-url", url, "--lease-time", "2s").start())
    return found


@pytest.fixture(params=["sqlite", "postgres"])
def servers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[ServerProcess]]:
    postgres = request.getfixturevalue("postgres") if request.param == "postgres" else None
    started = servers_on(request.param, tmp_path, postgres)
    yield started
    for server in started:
        if server.process is not None and server.process.poll() is None:
            server.process.send_signal(signal.SIGCONT)
        server.stop()


def running_intervals(client: Client, execution_id: str) -> tuple[bool, tuple[int, int]]:
    """Whether the execution was queued (started after it was created), and when it ran."""
    events = client.history(execution_id).events
    started = next(e["timestamp_ms"] for e in events if e["type"] == "WorkflowStarted")
    return started > events[0]["timestamp_ms"], (started, events[-1]["timestamp_ms"])


def most_at_once(intervals: list[tuple[int, int]]) -> int:
    """The most intervals [start, end) open at one instant."""
    edges = sorted([(end, -1) for _, end in intervals] + [(start, 1) for start, _ in intervals])
    open_now = most = 0
    for _, step in edges:  # at one instant ends come first: [start, end)
        open_now += step
        most = max(most, open_now)
    return most


def test_twenty_keys_of_fifty_never_run_more_than_two_per_key(
    servers: list[ServerProcess], workers: list[WorkerProcess]
) -> None:
    for n, server in enumerate(servers):
        urls = ",".join(s.url for s in servers[n:] + servers[:n])
        workers.append(WorkerProcess(server, f"w{n}", env={"ORBIT_URL": urls}))
    clients = [server.client() for server in servers]
    clients[0].deploy(KEYED)
    ids: dict[str, list[str]] = defaultdict(list)
    for n in range(KEYS * PER_KEY):
        key = f"k{n % KEYS}"
        started = clients[n % len(clients)].start(
            "keyed", input={"customer": key, "n": n}, execution_id=f"e{n}"
        )
        ids[key].append(started.execution_id)
    for execution_id in (i for key_ids in ids.values() for i in key_ids):
        assert clients[0].wait(execution_id, timeout=300).status == "completed", execution_id
    waited = 0
    for key, key_ids in ids.items():
        found = [running_intervals(clients[0], i) for i in key_ids]
        assert most_at_once([interval for _, interval in found]) == LIMIT, key
        waited += sum(queued for queued, _ in found)
    assert waited > KEYS, "too few executions were queued for the test to say anything"
    for client in clients:
        client.close()


def test_skip_refuses_a_start_beyond_the_limit_and_creates_nothing(
    servers: list[ServerProcess],
) -> None:
    clients = [server.client() for server in servers]
    clients[0].deploy(SINGLE.replace("ON_FULL", "skip"))
    clients[0].start("single", input={"customer": "c"}, execution_id="first")
    with pytest.raises(ApiError) as refused:
        clients[-1].start("single", input={"customer": "c"}, execution_id="second")
    assert (refused.value.status, refused.value.code) == (409, "CONCURRENCY_LIMIT")
    assert "concurrency key `c`" in refused.value.message
    with pytest.raises(ApiError) as missing:
        clients[0].describe("second")
    assert missing.value.status == 404
    clients[0].signal("first", "done", None)
    assert clients[0].wait("first", timeout=60).status == "completed"
    assert clients[-1].start("single", input={"customer": "c"}, execution_id="third")
    for client in clients:
        client.close()


def test_replace_cancels_the_oldest_running_one_and_starts_the_new_one(
    servers: list[ServerProcess],
) -> None:
    clients = [server.client() for server in servers]
    clients[0].deploy(SINGLE.replace("ON_FULL", "replace"))
    clients[0].start("single", input={"customer": "c"}, execution_id="old")
    clients[-1].start("single", input={"customer": "c"}, execution_id="new")
    old = clients[0].wait("old", timeout=60)
    assert old.status == "cancelled"
    reasons = [e["reason"] for e in clients[0].history("old").events if "reason" in e]
    assert reasons[0] == "replaced by `new`"
    wait_until(lambda: clients[0].describe("new").status == "running", 30, what="new runs")
    for client in clients:
        client.close()


RATED = """
workflow: rated
version: 1.0.0
input: {type: object, properties: {merchant: {type: string}, n: {type: integer}}}
tasks: {nap: {version: "1", rate_limit: {key: '${input.merchant}', limit: 10, per: 1s}}}
steps: [{id: charge, task: nap, input: {seconds: 0, n: "${input.n}"}}]
"""


def test_a_rate_limit_of_ten_a_second_is_never_exceeded_in_any_second(
    servers: list[ServerProcess], workers: list[WorkerProcess]
) -> None:
    for n, server in enumerate(servers):  # on PostgreSQL, a worker at each of the three
        workers.append(WorkerProcess(server, f"w{n}", env={"ORBIT_URL": server.url}))
    clients = [server.client() for server in servers]
    clients[0].deploy(RATED)
    ids = [
        clients[n % len(clients)].start("rated", input={"merchant": "m", "n": n}).execution_id
        for n in range(60)
    ]
    other = clients[-1].start("rated", input={"merchant": "other", "n": 0}).execution_id
    dispatched = []
    for execution_id in ids:
        assert clients[0].wait(execution_id, timeout=120).status == "completed"
        events = clients[0].history(execution_id).events
        dispatched += [e["timestamp_ms"] for e in events if e["type"] == "StepDispatched"]
    assert clients[0].wait(other, timeout=120).status == "completed"
    for client in clients:
        client.close()
    assert most_in_any_span(dispatched, 1000) <= 10
    assert max(dispatched) - min(dispatched) >= 5000  # 60 at 10 a second: six windows


def test_a_killed_servers_slot_is_given_back_after_the_takeover(
    tmp_path: Path, postgres: PostgresServer, workers: list[WorkerProcess]
) -> None:
    started = servers_on("postgres", tmp_path, postgres)
    try:
        doomed, survivor = started[0], started[1]
        workers.append(WorkerProcess(survivor, "w", env={"ORBIT_URL": survivor.url}))
        with doomed.client() as client:
            client.deploy(SLOW)
            for n in range(3):  # one runs on the doomed server, two wait behind it
                client.start("slow", input={"customer": "c"}, execution_id=f"s{n}")
            assert client.describe("s1").status == "queued"
        doomed.kill(signal.SIGKILL)
        with survivor.client() as client:
            for n in range(3):
                assert client.wait(f"s{n}", timeout=120).status == "completed", n
            found = [running_intervals(client, f"s{n}") for n in range(3)]
        assert most_at_once([interval for _, interval in found]) == 1
    finally:
        for server in started:
            server.stop()


def test_a_queued_start_waited_for_on_one_server_answers_once_another_ran_it(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    started = servers_on("postgres", tmp_path, postgres)
    clients = [server.client() for server in started]
    answers: list[object] = []
    try:
        clients[0].deploy(SINGLE.replace("ON_FULL", "queue"))
        clients[0].start("single", input={"customer": "c"}, execution_id="first")
        start = partial(clients[1].start, "single", input={"customer": "c"}, wait=60)
        waiting = threading.Thread(
            target=lambda: answers.append(start(execution_id="second")), daemon=True
        )
        waiting.start()  # the second is queued on s1, whose answer waits for its end
        wait_until(lambda: _status(clients[2], "second") == "queued", what="the queued start")
        clients[2].signal("first", "done")  # s0 ends it and starts the second: s0 owns it
        wait_until(lambda: _status(clients[2], "second") == "running", what="its promotion")
        clients[2].signal("second", "done")
        waiting.join(timeout=90)
        assert [getattr(a, "status", None) for a in answers] == ["completed"]
    finally:
        for client in clients:
            client.close()
        for server in started:
            server.stop()


def _status(client: Client, execution_id: str) -> str | None:
    try:
        return client.describe(execution_id).status
    except ApiError:
        return None


SLOW = """
workflow: slow
version: 1.0.0
input: {type: object, properties: {customer: {type: string}}}
flow: {concurrency: {key: '${input.customer}', limit: 1}}
tasks: {nap: {version: "1"}}
steps: [{id: a, task: nap, input: {seconds: 1}}]
"""


CHILD_OF_ONE = (
    SINGLE.replace("ON_FULL", "queue").replace("workflow: single", "workflow: kid")
    + 'output: {got: "${steps.wait.output}"}\n'
)
PARENT = """
workflow: mom
version: 1.0.0
workflows: {kid: {version: 1.0.0}}
steps: [{id: c, workflow: kid, input: {customer: one}}]
output: {child: "${steps.c.output}"}
"""


def test_a_parent_waits_for_its_queued_child_and_drops_it_when_terminated(tmp_path: Path) -> None:
    """A child queued behind its key's only slot: its parent waits for it, not failing, and
    takes its output once it started and ended; a terminated parent terminates its queued
    child without starting it."""
    server = ServerProcess(tmp_path).start()
    client = server.client()
    try:
        client.deploy(CHILD_OF_ONE)
        client.deploy(PARENT)
        client.start("kid", input={"customer": "one"}, execution_id="busy")
        for parent in ("m1", "m2"):
            client.start("mom", execution_id=parent)
            wait_until(lambda p=parent: _status(client, f"{p}.c") == "queued", what="queued")
        client.signal("busy", "done", 1)  # m1.c takes the slot; m2.c waits behind it
        wait_until(lambda: _status(client, "m1.c") == "running", what="the child's start")
        assert client.describe("m1").status == "running"
        client.terminate("m2", reason="stop")
        assert client.wait("m2.c", timeout=30).status == "terminated"
        assert [e["type"] for e in client.history("m2.c").events] == [
            "WorkflowCreated",
            "WorkflowTerminated",
        ]
        client.signal("m1.c", "done", 2)
        finished = client.wait("m1", timeout=30)
        assert (finished.status, finished.output) == ("completed", {"child": {"got": 2}})
    finally:
        client.close()
        server.stop()
