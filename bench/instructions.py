"""Instructions per execution of the real server and the real worker, counted by callgrind.

    python bench/instructions.py [--mode burst|idle|connections] [--executions N]
                                 [--process server|worker|both] [--log-level warning|info]
                                 [--worker-concurrency N]
                                 [--keep DIR]   (then: callgrind_annotate DIR/server)

The same path as ``bench/e2e.py`` (``orbit server`` on a SQLite file at its default durability,
``bench/noop_worker.py`` over WebSocket, the 3-step no-op workflow, each execution one
``POST /v1/executions?wait=60``), with the measured process(es) run under
``valgrind --tool=callgrind``. After a warm-up the counters are zeroed (``callgrind_control -z``),
N executions run, and the counters are dumped (``callgrind_control -d``): the dump's total divided
by N is the instructions per execution of that process, all its threads included. ``burst``
sends N at once over N keep-alive connections, ``idle`` one at a time (the latency path).
``connections`` runs no execution: N connections opened at once each send one ``GET /healthz``
and close, so the figure is what the transport costs a connection (accept, read, answer,
close), which each execution of a burst from an ordinary client pays once.

``--worker-concurrency`` below ``--executions`` (say 50 for 300) counts a burst larger than its
worker's credit, as a burst of 5,000 against the default 2,000 is in seconds: tasks beyond the
credit wait in the dispatcher, and each one's dispatch is an offer to its actor and a commit of
its own. (Counting a burst of 5,000 itself takes the best part of an hour, and the fifth round
found it only ~5% over one of 100: under callgrind few of its tasks queued. A credit of 50 for
300 queues nearly every one.)

Seconds swing with the machine's load; instruction counts do not, so this judges a change to
the server's or the worker's hot path the way ``bench/cpu.py --instructions`` judges the
in-process runtime. Ends with one JSON line. Takes about a minute per 100 executions.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import trio
from e2e import THREE, Http  # bench/e2e.py (a script's folder is on sys.path)

ROOT = Path(__file__).resolve().parent.parent


def _callgrind(out: Path) -> list[str]:
    return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-line=no"]


def start(
    folder: Path, measure: set[str], log_level: str = "warning", concurrency: int = 2000
) -> tuple[subprocess.Popen[str], subprocess.Popen[str], str]:
    """The server and the worker, each under callgrind when measured; returns them and the URL."""
    server_cmd = [sys.executable, "-m", "orbit_actors.cli", "server", "--db", str(folder / "b.db"),
                  "--bind", "127.0.0.1:0", "--log-level", log_level]  # fmt: skip
    if "server" in measure:
        server_cmd = _callgrind(folder / "server.%p") + server_cmd
    server = subprocess.Popen(
        server_cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert server.stdout is not None
    url = ""
    deadline = time.monotonic() + 600
    while not url and time.monotonic() < deadline:
        found = re.search(r"ready on (http://\S+)", server.stdout.readline())
        url = found.group(1) if found else ""
    if not url:
        raise SystemExit("the server did not start")
    worker_cmd = [sys.executable, str(ROOT / "bench" / "noop_worker.py")]
    if "worker" in measure:
        worker_cmd = _callgrind(folder / "worker.%p") + worker_cmd
    environment = {**os.environ, "ORBIT_URL": url, "ORBIT_BENCH_CONCURRENCY": str(concurrency)}
    worker = subprocess.Popen(worker_cmd, env=environment, stderr=subprocess.DEVNULL, text=True)
    return server, worker, url


async def one(http: Http, n: int) -> None:
    status, answer = await http.request(
        "POST", "/v1/executions?wait=60", {"workflow": "noop3", "input": {"n": n}}
    )
    wait = f"/v1/executions/{answer.get('execution_id')}/wait?timeout=60"
    while (status == 201 and answer["status"] == "running") or status == 408:
        status, answer = await http.request("GET", wait)  # a worker slow to start (valgrind)
    assert status in (200, 201) and answer["status"] == "completed", answer
    assert answer["output"] == {"n": n}, answer


async def healthz(http: Http, n: int) -> None:
    """One request the server does nothing for."""
    status, _ = await http.request("GET", "/healthz")
    assert status == 200, status


async def drive(url: str, total: int, mode: str, offset: int) -> None:
    """``total`` executions: all at once (burst) or one at a time (idle); or ``total``
    connections at once, one ``GET /healthz`` each (connections)."""
    if mode == "idle":
        http = await Http.open(url)
        for n in range(total):
            await one(http, offset + n)
        await http.stream.aclose()
        return
    each = healthz if mode == "connections" else one
    connections = [await Http.open(url) for _ in range(total)]
    async with trio.open_nursery() as nursery:
        for n, http in enumerate(connections):
            nursery.start_soon(each, http, offset + n)
    for http in connections:
        await http.stream.aclose()


def control(option: str, pid: int) -> None:
    subprocess.run(["callgrind_control", option, str(pid)], check=True, capture_output=True)


def last_dump(folder: Path, name: str, pid: int) -> Path:
    """The file of the last dump of process ``pid``."""
    dumps = sorted(folder.glob(f"{name}.{pid}.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
    return dumps[-1]


def dumped_total(folder: Path, name: str, pid: int) -> int:
    """The instructions of the last dump of process ``pid`` (its ``totals:`` line)."""
    text = last_dump(folder, name, pid).read_text()
    found = re.search(r"^(?:totals|summary): (\d+)", text, re.M)
    assert found, f"no total in the dump of {name}"
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["burst", "idle", "connections"], default="burst")
    parser.add_argument("--executions", type=int, default=200)
    parser.add_argument("--warm-up", type=int, default=50)
    parser.add_argument("--process", choices=["server", "worker", "both"], default="both")
    parser.add_argument(
        "--log-level",
        choices=["warning", "info", "debug"],
        default="warning",
        help="the server's (benches run at warning; its default is info)",
    )
    parser.add_argument("--keep", type=Path, help="copy the dumps here (for callgrind_annotate)")
    parser.add_argument("--worker-concurrency", type=int, default=2000,
                        help="below the burst: its tasks queue in the dispatcher")  # fmt: skip
    args = parser.parse_args()
    measure = {"server", "worker"} if args.process == "both" else {args.process}
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        server, worker, url = start(folder, measure, args.log_level, args.worker_concurrency)
        try:
            httpx.post(f"{url}/v1/definitions", content=THREE, timeout=600,
                       headers={"content-type": "application/yaml"}).raise_for_status()  # fmt: skip
            trio.run(drive, url, args.warm_up, "idle", 0)  # also waits for the worker
            trio.run(drive, url, args.warm_up, args.mode, args.warm_up)
            pids = {"server": server.pid, "worker": worker.pid}
            for process in measure:
                control("-z", pids[process])
            trio.run(drive, url, args.executions, args.mode, 2 * args.warm_up)
            figures: dict[str, float] = {}
            for process in sorted(measure):
                control("-d", pids[process])
                total = dumped_total(folder, process, pids[process])
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    shutil.copy(last_dump(folder, process, pids[process]), args.keep / process)
                figures[f"{process}_M_instructions_per_exec"] = round(
                    total / args.executions / 1e6, 3
                )
        finally:
            worker.terminate()
            server.terminate()
            worker.wait(120)
            server.wait(120)
    for process in sorted(measure):
        per = figures[f"{process}_M_instructions_per_exec"]
        each = "connection" if args.mode == "connections" else "execution"
        print(f"{process}: {per:.3f} M instructions per {each} ({args.mode}, {args.executions})")
    print(json.dumps({"mode": args.mode, "executions": args.executions,
                      "log_level": args.log_level, **figures}))  # fmt: skip


if __name__ == "__main__":
    main()
