"""The upgrade check against many passivated running executions in a real server process: how
long checking a candidate against all of them takes (every page of
``POST /v1/definitions/{name}/{version}/check``), and what it does meanwhile to the p50 of other
requests (``GET /v1/executions/{id}`` of waiting executions, one connection) against the same
requests with no check running. Ends with one JSON line.

The executions are written into the SQLite file before the server starts (filling through the
API is not what is measured); each waits on a signal with a 7-day timeout, so none is in memory.

    .venv/bin/python bench/upgrade.py              # 100,000 executions
    .venv/bin/python bench/upgrade.py --n 20000    # fewer, on a loaded machine

``check_100k_s`` is measured at ``--n 100000`` and extrapolated linearly from a smaller ``--n``
(``check_s`` is what was measured); CPU seconds are split between the check process and the
server (whose share includes the probe's requests).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orbit_actors.client import Client  # noqa: E402
from orbit_actors.decide.rest import rest_of  # noqa: E402
from orbit_actors.history import events as ev  # noqa: E402
from orbit_actors.history.apply import replay  # noqa: E402
from orbit_actors.ir import CompiledDefinition, compile_source  # noqa: E402
from orbit_actors.store.base import Commit, DefinitionRecord  # noqa: E402
from orbit_actors.store.sqlite import open_sqlite_store  # noqa: E402
from orbit_actors.testing import Driver  # noqa: E402
from orbit_actors.views import row_of  # noqa: E402

BASE = """
workflow: upgrade-bench
version: 1.0.0
timeout: 7d
tasks: {notify: {version: "1"}}
signals: {approve: {type: object, properties: {by: {type: string}}}}
steps:
  - {id: ask, value: {asked: "${input.n}"}}
  - {id: wait, await: approve, timeout: 7d}
"""
CANDIDATE = BASE.replace("version: 1.0.0", "version: 1.1.0") + (
    '  - {id: thank, task: notify, input: {to: "${steps.wait.output.by}"}}\n'
)


def history_of(
    definition: CompiledDefinition, execution_id: str, n: int, now: int
) -> list[ev.Event]:
    """The history of one execution waiting for `approve`, started at ``now``."""
    driver = Driver(definition, execution_id=execution_id, now=now)
    driver.start({"n": n})
    return driver.history


async def fill(db: Path, n: int) -> None:
    """Write ``n`` waiting executions of BASE into ``db``, a thousand commits at a time."""
    definition = compile_source(BASE)
    ir = json.dumps(definition.ir.to_ir_dict(), sort_keys=True)
    record = DefinitionRecord(
        definition.name, definition.version, definition.definition_hash, ir, 0
    )
    now = int(time.time() * 1000)
    async with open_sqlite_store(db, synchronous="normal") as store:
        await store.put_definition(record)
        for start in range(0, n, 1000):
            commits = []
            for i in range(start, min(n, start + 1000)):
                history = history_of(definition, f"wait-{i}", i, now)
                state = replay(history)
                row = row_of(state)
                rest = rest_of(state, definition)
                row.wake_at_ms, row.busy = rest.wake_at_ms, rest.busy
                commits.append(Commit(row, history, create=True))
            async with trio.open_nursery() as nursery:
                for commit in commits:
                    nursery.start_soon(store.commit, commit)


def start_server(db: Path) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "orbit_actors.cli", "server", "--db", str(db), "--bind",
               "127.0.0.1:0", "--log-level", "warning", "--passivate-after", "1s"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if "ready on" in line:
            return process, line.split("ready on ")[1].split()[0]
    raise SystemExit("the server did not start")


def latencies(
    url: str, n: int, stop: threading.Event | None = None, count: int = 300
) -> list[float]:
    """Seconds per ``GET /v1/executions/{id}`` of random waiting executions, one at a time:
    ``count`` of them, or until ``stop`` is set."""
    found: list[float] = []
    with httpx.Client(base_url=url) as http:
        while (stop is None and len(found) < count) or (stop is not None and not stop.is_set()):
            began = time.perf_counter()
            answer = http.get(f"/v1/executions/wait-{random.randrange(n)}")
            found.append(time.perf_counter() - began)
            assert answer.status_code == 200, answer.text
            time.sleep(0.01)  # other requests, not a flood
    return found


def cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU seconds used so far by process ``pid``, and by its children that still run (the
    check process)."""
    ticks = os.sysconf("SC_CLK_TCK")

    def of(each: int) -> float:
        fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return of(pid), sum(of(int(child)) for child in children)


def check_all(url: str, page: int) -> tuple[float, int, int]:
    """Check CANDIDATE against every running execution; (seconds, checked, incompatible)."""
    checked = incompatible = 0
    cursor = None
    began = time.perf_counter()
    with Client(url, timeout=600) as client:
        while True:
            answer = client.check("upgrade-bench", "1.0.0", CANDIDATE, limit=page, cursor=cursor)
            checked += answer.checked
            incompatible += len(answer.incompatible)
            if answer.next_cursor is None:
                return time.perf_counter() - began, checked, incompatible
            cursor = answer.next_cursor


def run(n: int, page: int, folder: Path) -> dict[str, float]:
    db = folder / "upgrade.db"
    began = time.perf_counter()
    trio.run(fill, db, n)
    print(f"{n:,} waiting executions written in {time.perf_counter() - began:.1f} s", flush=True)
    server, url = start_server(db)
    try:
        latencies(url, n, count=50)  # warm up
        idle = statistics.median(latencies(url, n))
        stop = threading.Event()
        during: list[float] = []
        probe = threading.Thread(target=lambda: during.extend(latencies(url, n, stop)))
        probe.start()
        server_cpu, check_cpu = cpu_seconds(server.pid)
        load_before = os.getloadavg()[0]
        seconds, checked, incompatible = check_all(url, page)
        load = (load_before + os.getloadavg()[0]) / 2
        server_after, check_after = cpu_seconds(server.pid)
        server_cpu, check_cpu = server_after - server_cpu, check_after - check_cpu
        stop.set()
        probe.join()
        assert checked == n and incompatible == 0, (checked, incompatible)
        busy = statistics.median(during)
        print(f"checked {checked:,} in {seconds:.1f} s; CPU: {check_cpu:.1f} s in the check "
              f"process, {server_cpu:.1f} s in the server (the probe's requests included); p50 "
              f"of other requests {idle * 1000:.1f} ms idle, {busy * 1000:.1f} ms during the "
              f"check; load average {load:.1f} on {os.cpu_count()} cores", flush=True)  # fmt: skip
        return {"check_s": seconds, "ratio": busy / idle, "cpu_s": check_cpu + server_cpu,
                "check_cpu_s": check_cpu, "load": load}  # fmt: skip
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100_000, help="waiting executions")
    parser.add_argument("--page", type=int, default=1000, help="executions per check request")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        figures = run(args.n, args.page, Path(folder))
    scale = 100_000 / args.n  # below 100,000 the 100k figures are extrapolated linearly
    print(json.dumps({
        "n": args.n,
        "check_s": round(figures["check_s"], 2),
        "check_100k_s": round(figures["check_s"] * scale, 2),
        "serving_p50_ratio_during_check": round(figures["ratio"], 2),
        "check_process_cpu_s_per_100k": round(figures["check_cpu_s"] * scale, 1),
        "cpu_s_per_100k": round(figures["cpu_s"] * scale, 1),
        "load_average": round(figures["load"], 1),
    }))  # fmt: skip


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
