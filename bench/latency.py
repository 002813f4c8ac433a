"""Latency of one execution at a time, and where it goes.

    python bench/latency.py [--executions 300]          p50/p90/p99 of POST ?wait, one at a time
    python bench/latency.py --split [--executions 100]  the same under `perf trace`, split

A real server (SQLite, synchronous FULL) and the bench's no-op worker process; each execution is
one ``POST /v1/executions?wait=60`` of the 3-step no-op workflow on a keep-alive connection,
sent after the previous answer. ``--split`` traces the server's system calls with ``perf trace``
(it adds ~25% to every figure) and cuts each execution at the calls that bound its segments:
the request read, the wake-up of the writer thread, its ``fdatasync``, its wake-up of the trio
thread, and the reads and writes of the worker's socket. Prints each segment's median. Ends with
one JSON line.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import trio
from e2e import Http, percentile, server_and_worker

TRACED = "fdatasync,sendto,write,read,recvfrom,futex"
_LINE = re.compile(r"^\s*([\d.]+) \(\s*([\d.]*) ms\): \S+?/(\d+) (\w+)\((.*?)\)\s+=\s+(-?\d+)")


@dataclass(frozen=True)
class Call:
    """One finished system call of the trace."""

    at_ms: float
    took_ms: float
    thread: str
    name: str
    fd: str
    result: int
    args: str


async def one_at_a_time(url: str, count: int) -> list[float]:
    """Seconds each of ``count`` sequential ``POST ?wait`` executions took."""
    http = await Http.open(url)
    took = []
    for n in range(count):
        began = time.perf_counter()
        _, answer = await http.request(
            "POST", "/v1/executions?wait=60", {"workflow": "noop3", "input": {"n": n}}
        )
        assert answer["status"] == "completed" and answer["output"] == {"n": n}, answer
        took.append(time.perf_counter() - began)
    await http.stream.aclose()
    return took


def read_trace(path: Path) -> list[Call]:
    """The finished calls of a ``perf trace`` output, in time order."""
    calls = []
    for line in path.read_text().splitlines():
        found = _LINE.match(line)
        if found:
            at, took, thread, name, args, result = found.groups()
            fd = re.search(r"fd: (\d+)", args)
            calls.append(Call(float(at), float(took or 0), thread, name,
                              fd.group(1) if fd else "", int(result), args))  # fmt: skip
    return sorted(calls, key=lambda call: call.at_ms)


def split(calls: list[Call], main: str) -> dict[str, list[float]]:
    """Each segment's durations (ms): a small state machine over the trace (module docstring)."""
    client = next(c.fd for c in calls if c.thread == main and c.name == "read" and c.result > 0)
    worker = next(c.fd for c in calls if c.thread == main and c.name == "write" and c.fd != client)
    segments: defaultdict[str, list[float]] = defaultdict(list)
    state, mark, sent = "", 0.0, None
    for c in calls:
        if c.thread == main and c.name == "read" and c.result > 0 and c.fd in (client, worker):
            if c.fd == worker and sent is not None:
                segments["task written -> result read (worker)"].append(c.at_ms - sent)
            state, mark = ("request" if c.fd == client else "result"), c.at_ms
        elif c.thread == main and c.name == "futex" and "WAKE" in c.args and c.result == 1:
            if state in ("request", "result"):
                segments[f"{state} read -> writer woken"].append(c.at_ms - mark)
                state, mark = "woken", c.at_ms
        elif c.thread != main and c.name == "fdatasync" and state == "woken":
            segments["writer woken -> fdatasync"].append(c.at_ms - mark)
            segments["fdatasync"].append(c.took_ms)
            state, mark = "synced", c.at_ms + c.took_ms
        elif c.thread != main and c.name == "sendto" and state == "synced":
            segments["fdatasync done -> trio thread signalled"].append(c.at_ms - mark)
            state, mark = "signalled", c.at_ms
        elif c.thread == main and c.name == "recvfrom" and state == "signalled":
            segments["signalled -> trio thread runs"].append(c.at_ms - mark)
            state, mark = "awake", c.at_ms
        elif c.thread == main and c.name == "write" and state == "awake":
            name = "task" if c.fd == worker else "answer"
            segments[f"trio thread runs -> {name} written"].append(c.at_ms - mark)
            state, sent = "", (c.at_ms if c.fd == worker else None)
    return segments


def traced(server: subprocess.Popen[str], url: str, count: int) -> dict[str, list[float]]:
    """Run ``count`` executions under ``perf trace`` of the server; the segments."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "trace.txt"
        perf = subprocess.Popen(
            ["perf", "trace", "-p", str(server.pid), "-e", TRACED, "-o", str(out)],
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(1.0)  # perf attaches
        trio.run(one_at_a_time, url, count)
        perf.terminate()
        perf.wait(30)
        return split(read_trace(out), str(server.pid))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--executions", type=int, default=300)
    parser.add_argument("--split", action="store_true", help="trace the server (perf trace)")
    args = parser.parse_args()
    with server_and_worker() as (server, _, url):
        if args.split:
            segments = traced(server, url, args.executions)
            for name, values in segments.items():
                print(f"{name:45s} n={len(values):4d}  median {statistics.median(values):.3f} ms")
            print(json.dumps({k: round(statistics.median(v), 3) for k, v in segments.items()}))
            return
        took = trio.run(one_at_a_time, url, args.executions)
    p50, p90, p99 = (percentile(took, q) * 1000 for q in (0.5, 0.9, 0.99))
    print(f"one at a time ({args.executions}): p50 {p50:.2f} ms  p90 {p90:.2f}  p99 {p99:.2f}")
    print(json.dumps({"p50_ms": round(p50, 2), "p90_ms": round(p90, 2), "p99_ms": round(p99, 2)}))


if __name__ == "__main__":
    main()
