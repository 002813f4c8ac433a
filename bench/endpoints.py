"""Server CPU per request of each API endpoint, against ``/healthz`` (what the transport alone
costs), in a real server process on a SQLite file, one request at a time on one keep-alive
connection of the lean client of ``bench/e2e.py``. Issue 14 asks that start, describe and wait
each cost about what the transport costs.

    .venv/bin/python bench/endpoints.py [--requests 300]

Ends with one JSON line: server CPU ms per request by endpoint, and each one's ratio to
``/healthz``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from e2e import Http, cpu_seconds, start_server  # noqa: E402  # bench/e2e.py

from orbit_actors.client import Client  # noqa: E402

WAITS = """
workflow: waits
version: 1.0.0
signals: {go: null}
steps: [{id: w, await: go}]
output: {got: "${steps.w.output}"}
"""

Probe = Callable[[Http, int], Awaitable[None]]


async def measure(url: str, pid: int, count: int, probe: Probe) -> float:
    """Server CPU milliseconds per call of ``probe`` (after a warm-up of 20 calls)."""
    http = await Http.open(url)
    for n in range(20):
        await probe(http, n + 1_000_000)
    before = cpu_seconds(pid)
    for n in range(count):
        await probe(http, n)
    spent = cpu_seconds(pid) - before
    await http.stream.aclose()
    return spent * 1000 / count


def probes(tag: str) -> dict[str, Probe]:
    """Each endpoint's probe; ``tag`` keeps execution ids of one run apart from another's."""

    async def ok(answer: tuple[int, object]) -> None:
        assert answer[0] < 300, answer

    async def healthz(http: Http, n: int) -> None:
        await ok(await http.request("GET", "/healthz"))

    async def start(http: Http, n: int) -> None:
        body = {"workflow": "waits", "execution_id": f"{tag}-s-{n}"}
        await ok(await http.request("POST", "/v1/executions", body))

    async def describe_running(http: Http, n: int) -> None:
        await ok(await http.request("GET", f"/v1/executions/{tag}-s-{n}"))

    async def signal(http: Http, n: int) -> None:
        path = f"/v1/executions/{tag}-s-{n}/signals/go"
        await ok(await http.request("POST", path, {"payload": n}))

    async def wait_finished(http: Http, n: int) -> None:
        await ok(await http.request("GET", f"/v1/executions/{tag}-s-{n}/wait?timeout=5"))

    async def describe_finished(http: Http, n: int) -> None:
        await ok(await http.request("GET", f"/v1/executions/{tag}-s-{n}"))

    async def history(http: Http, n: int) -> None:
        await ok(await http.request("GET", f"/v1/executions/{tag}-s-{n}/history"))

    async def listing(http: Http, n: int) -> None:
        await ok(await http.request("GET", "/v1/executions?limit=20"))

    return {
        "healthz": healthz, "start": start, "describe_running": describe_running,
        "signal": signal, "wait_finished": wait_finished,
        "describe_finished": describe_finished, "history": history, "list": listing,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        server, url = start_server(Path(folder))
        try:
            with Client(url) as client:
                client.deploy(WAITS)
            costs = {
                name: trio.run(measure, url, server.pid, args.requests, probe)
                for name, probe in probes("bench").items()
            }
        finally:
            server.terminate()
            server.wait(30)
    base = costs["healthz"]  # 0 when too few requests for the CPU clock's 10 ms ticks
    ratios = {k: round(v / base, 2) if base else None for k, v in costs.items()}
    for name, cost in costs.items():
        print(f"{name:>18}: {cost:6.3f} ms server CPU per request ({ratios[name]}x /healthz)")
    print(json.dumps({
        "server_cpu_ms": {k: round(v, 3) for k, v in costs.items()}, "ratio_to_healthz": ratios,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
