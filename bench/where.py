"""Where the server's CPU per execution goes, by area (the issue's "each 0.1 ms").

    pip install -e '.[bench]'    (py-spy)
    python bench/where.py [--bursts 6] [--burst 500] [--rate 1000] [--keep FILE]

The path of ``bench/instructions.py`` (``orbit server`` on a SQLite file at its default
durability, ``bench/noop_worker.py`` over WebSocket, the 3-step no-op workflow, each execution
one ``POST /v1/executions?wait=60``, ``--burst`` at once over as many keep-alive connections).
``py-spy --gil`` samples the thread that holds the interpreter while the bursts run; each
sample goes to the area of its innermost frame that names one (``RULES``; a frame of the
standard library or a package not listed goes to the caller that does), and the shares are
scaled to the server's measured CPU per execution (``/proc``). Ends with one JSON line.

Why ``--gil``: without it py-spy counts a thread as busy while it waits for the interpreter
lock or for the disk, which made the writer thread look like a fifth of the server. ``perf
record`` on the same run (``perf report --sort dso``) puts 81% of the server's CPU in the
interpreter, 5% in pydantic-core, 7% in the kernel and 3% in SQLite: the ~10% that runs with
the lock released (SQLite's C code, system calls) is spread over the shares below pro rata.

Shares are samples, so they carry the machine's load as noise (a few points between runs);
instruction counts (``bench/instructions.py``) judge a change, this says where to look.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import httpx
import trio
from e2e import THREE, cpu_seconds  # bench/e2e.py (a script's folder is on sys.path)
from instructions import drive, start  # bench/instructions.py

RULES: list[tuple[str, str]] = [
    # (a pattern of a frame, "function (file:line)", and its area); the innermost frame that
    # one matches decides, and the first rule that matches it.
    (r"SqliteEngine\.(begin|commit) ", "store: BEGIN and COMMIT (mostly the fsync's wait)"),
    (r"orbit_actors/store/.*(writer|sqlite)", "store: writer thread (SQL statements, rows)"),
    (r"[(/]sqlite3/", "store: writer thread (SQL statements, rows)"),
    (r"orbit_actors/store/", "store: trio side (group-commit hand-off, reads)"),
    (r"orbit_actors/(decide|ir)/", "decider and expressions (decide/, ir/)"),
    (r"orbit_actors/history/", "history: events, apply, the state"),
    (r"orbit_actors/(actors|mailbox|supervisor|runtime)", "actors, mailboxes, supervisor"),
    (r"orbit_actors/observe/", "metrics, logs, traces"),
    (r"orbit_actors/http/", "HTTP/1.1 and WebSocket framing (http/)"),
    (r"orbit_actors/(server|views|api|wire)/", "API handlers, worker gateway, wire messages"),
    (r"orbit_actors/", "other Orbit code"),
    (r"[(/]pydantic", "pydantic models built and dumped"),
    (r"[(/]json/", "standard JSON encode and decode"),
    (r"trio/_core/_io_epoll", "epoll (trio's wait for I/O; a poll with nothing ready is idle)"),
    (r"trio/_socket", "socket send and receive system calls"),
    (r"[(/]trio/", "trio: run loop, task switches, cancel scopes"),
    (r"[(/]threading\.py", "threads: hand-offs and waits"),
]


def area_of(stack: str) -> str:
    """The area of one sample: its innermost frame that a rule names (py-spy's raw stacks run
    from the outermost frame to the innermost, ``;``-separated)."""
    for frame in reversed(stack.split(";")):
        for pattern, area in RULES:
            if re.search(pattern, frame):
                return area
    return "other (interpreter start-up, unnamed frames)"


def tally(raw: Path) -> Counter[str]:
    """Samples per area in a py-spy raw (collapsed) file."""
    counts: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            counts[area_of(stack)] += int(count)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bursts", type=int, default=6)
    parser.add_argument("--burst", type=int, default=500)
    parser.add_argument("--rate", type=int, default=1000, help="py-spy samples per second")
    parser.add_argument("--keep", type=Path, help="copy py-spy's raw samples to this file")
    args = parser.parse_args()
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        server, worker, url = start(folder, set())
        try:
            httpx.post(f"{url}/v1/definitions", content=THREE, timeout=60,
                       headers={"content-type": "application/yaml"}).raise_for_status()  # fmt: skip
            trio.run(drive, url, 50, "idle", 0)  # also waits for the worker
            raw = folder / "server.txt"
            sampler = subprocess.Popen(
                [spy, "record", "-r", str(args.rate), "-f", "raw", "--nonblocking", "--gil",
                 "-o", str(raw), "-p", str(server.pid)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            before = cpu_seconds(server.pid)
            for n in range(args.bursts):
                trio.run(drive, url, args.burst, "burst", 100 + n * args.burst)
            used = cpu_seconds(server.pid) - before
            sampler.send_signal(2)  # SIGINT: py-spy writes its file and stops
            sampler.wait(60)
            counts = tally(raw)
            if args.keep:
                shutil.copy(raw, args.keep)
        finally:
            worker.terminate()
            server.terminate()
            worker.wait(60)
            server.wait(60)
    per_exec_ms = used * 1000 / (args.bursts * args.burst)
    samples = sum(counts.values()) or 1
    shares = {area: per_exec_ms * n / samples for area, n in counts.most_common()}
    print(f"server CPU {per_exec_ms:.3f} ms per execution ({samples} samples)")
    for area, ms in shares.items():
        print(f"  {ms:6.3f} ms  {area}")
    print(json.dumps({"server_cpu_ms_per_exec": round(per_exec_ms, 3),
                      "ms_per_exec_by_area": {a: round(ms, 3) for a, ms in shares.items()}}))  # fmt: skip


if __name__ == "__main__":
    main()
