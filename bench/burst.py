"""``python bench/e2e.py --burst N``: the way an ordinary client loads Orbit, and the way its
peers are measured. N executions of the 3-step no-op workflow submitted at once, each one
``POST /v1/executions?wait=60`` whose answer carries the output (checked), from one client:

- ``--client aiohttp`` (the default): one ``ClientSession`` without a connection limit, so one
  connection per request in flight, on asyncio;
- ``--client httpx``: an ``AsyncClient`` per execution (one connection each; one shared pool
  of N connections would measure httpcore's pool, whose cost per request grows with its size).

Right after the burst, a few executions one at a time: the burst's client has just closed its N
connections, and those requests wait while the server closes them (their end of file is read by
each connection's task, all in two or three turns of trio's run loop); printed with how long the
server stayed busy after the burst. Then, once the server is quiet, one execution at a time with
the same client (p50/p99), and whether a burst of 5,000 completes with every output right (the
burst itself when N is 5,000 or more). ``--compare`` adds the same burst as start + ``GET
…/wait`` and as ``GET /healthz`` (the ceiling the client and the transport alone set on this
machine).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import httpx
import trio

FIVE_THOUSAND = 5000
AFTER_BURST = 5  # executions one at a time right after a burst
QUIET_WINDOW = 0.2  # seconds: a server quiet over one spent under QUIET_SHARE of a core
QUIET_SHARE = 0.1
Path = Callable[[Any, int], Awaitable[None]]  # one execution (or request) through a client


# -- one execution, through either client ---------------------------------------------------
async def _post(client: Any, path: str, body: Any) -> Any:
    if isinstance(client, httpx.AsyncClient):
        return (await client.post(path, json=body)).json()
    async with client.post(path, json=body) as answer:
        return await answer.json()


async def _get(client: Any, path: str) -> tuple[int, Any]:
    if isinstance(client, httpx.AsyncClient):
        answer = await client.get(path)
        return answer.status_code, answer.json() if path != "/healthz" else None
    async with client.get(path) as answer:
        return answer.status, await answer.json() if path != "/healthz" else None


async def one_request(client: Any, n: int) -> None:
    """Start an execution and get its output in one request."""
    body = await _post(client, "/v1/executions?wait=60", {"workflow": "noop3", "input": {"n": n}})
    assert body["status"] == "completed" and body["output"] == {"n": n}, body


async def start_then_wait(client: Any, n: int) -> None:
    """Start an execution, then wait for its output: two requests."""
    started = await _post(client, "/v1/executions", {"workflow": "noop3", "input": {"n": n}})
    _, body = await _get(client, f"/v1/executions/{started['execution_id']}/wait?timeout=60")
    assert body["status"] == "completed" and body["output"] == {"n": n}, body


async def healthz(client: Any, n: int) -> None:
    """A request the server does nothing for."""
    status, _ = await _get(client, "/healthz")
    assert status == 200


# -- bursts ---------------------------------------------------------------------------------
async def _aiohttp_burst(url: str, total: int, path: Path) -> float:
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(url, connector=connector, timeout=timeout) as session:
        began = time.perf_counter()
        await asyncio.gather(*(path(session, n) for n in range(total)))
        return total / (time.perf_counter() - began)


async def _httpx_burst(url: str, total: int, path: Path) -> float:
    context = ssl.create_default_context()  # made once: httpx would load the CAs per client

    async def client(n: int) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=600, verify=context) as http:
            await path(http, n)

    began = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for n in range(total):
            nursery.start_soon(client, n)
    return total / (time.perf_counter() - began)


def burst(client: str, url: str, total: int, path: Path) -> float:
    """Executions (or requests) per second of ``total`` through ``path`` at once."""
    if client == "aiohttp":
        return asyncio.run(_aiohttp_burst(url, total, path))
    return trio.run(_httpx_burst, url, total, path)


def completes(client: str, url: str, total: int) -> bool:
    """Whether a burst of ``total`` completes with every output right."""
    try:
        burst(client, url, total, one_request)
    except (TimeoutError, AssertionError, OSError, aiohttp.ClientError, httpx.HTTPError):
        return False
    return True


# -- one at a time --------------------------------------------------------------------------
async def _aiohttp_idle(url: str, count: int) -> list[float]:
    async with aiohttp.ClientSession(url, timeout=aiohttp.ClientTimeout(total=120)) as session:
        return [await _timed(session, n) for n in range(count)]


async def _httpx_idle(url: str, count: int) -> list[float]:
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        return [await _timed(client, n) for n in range(count)]


async def _timed(client: Any, n: int) -> float:
    began = time.perf_counter()
    await one_request(client, n)
    return time.perf_counter() - began


def one_at_a_time(client: str, url: str, count: int) -> list[float]:
    """Latencies of ``count`` executions one after another (one request each, keep-alive)."""
    if client == "aiohttp":
        return asyncio.run(_aiohttp_idle(url, count))
    return trio.run(_httpx_idle, url, count)


# -- the measurement ------------------------------------------------------------------------
def run_burst(
    url: str, pids: tuple[int, int], total: int, idle_count: int, client: str, *,
    check_5000: bool = True, compare: bool = False, cpu_seconds: Callable[[int], float],
) -> dict[str, Any]:  # fmt: skip
    """Every ``--burst`` figure (see the module docstring); prints them and returns the line."""
    server_pid, worker_pid = pids
    burst(client, url, min(total, 100), one_request)  # warm up
    until_quiet(server_pid, cpu_seconds)
    server_before, worker_before = cpu_seconds(server_pid), cpu_seconds(worker_pid)
    client_before = time.process_time()
    rate = burst(client, url, total, one_request)
    ended = time.perf_counter()
    server_ms = (cpu_seconds(server_pid) - server_before) * 1000 / total
    worker_ms = (cpu_seconds(worker_pid) - worker_before) * 1000 / total
    client_ms = (time.process_time() - client_before) * 1000 / total
    print(f"burst of {total} ({client}), one request each: {rate:,.0f} executions/s; CPU per "
          f"execution: server {server_ms:.3f} ms, worker {worker_ms:.3f} ms, this client "
          f"{client_ms:.2f} ms")  # fmt: skip
    after = one_at_a_time(client, url, AFTER_BURST)  # sent as the burst's connections close
    busy = until_quiet(server_pid, cpu_seconds) - ended
    first = ", ".join(f"{seconds * 1000:.1f}" for seconds in after)
    print(f"right after the burst, one at a time: {first} ms (the server closes the burst's "
          f"connections meanwhile); it was quiet again {busy:.2f} s after the burst")  # fmt: skip
    if compare:
        two = burst(client, url, total, start_then_wait)
        ceiling = burst(client, url, total, healthz)
        print(f"burst of {total}, start + wait: {two:,.0f} executions/s; GET /healthz: "
              f"{ceiling:,.0f} requests/s (the client and the transport alone)")  # fmt: skip
        until_quiet(server_pid, cpu_seconds)
    quiet = sorted(one_at_a_time(client, url, idle_count))
    p50, p99 = _percentile(quiet, 0.5) * 1000, _percentile(quiet, 0.99) * 1000
    print(f"one at a time, one request each ({idle_count}): p50 {p50:.2f} ms, p99 {p99:.2f} ms")
    completed: bool | None = None
    if total >= FIVE_THOUSAND:
        completed = True  # the burst above checked every output
    elif check_5000:
        completed = completes(client, url, FIVE_THOUSAND)
        print(f"a burst of {FIVE_THOUSAND:,}: {'completed' if completed else 'NOT completed'}")
    line = {
        "burst_one_request_exec_per_s": round(rate),
        "burst_server_cpu_ms_per_exec": round(server_ms, 3),
        "burst_worker_cpu_ms_per_exec": round(worker_ms, 3),
        "burst_idle_p50_ms": round(p50, 2), "burst_idle_p99_ms": round(p99, 2),
        "burst_5000_completed": completed,
    }  # fmt: skip
    print(json.dumps(line))
    return line


def until_quiet(pid: int, cpu_seconds: Callable[[int], float], limit: float = 30.0) -> float:
    """Wait until process ``pid`` spends under :data:`QUIET_SHARE` of a core over
    :data:`QUIET_WINDOW` (at most ``limit`` seconds); returns the ``time.perf_counter()`` at
    the start of that quiet window."""
    deadline = time.perf_counter() + limit
    while True:
        began, spent = time.perf_counter(), cpu_seconds(pid)
        time.sleep(QUIET_WINDOW)
        if cpu_seconds(pid) - spent < QUIET_SHARE * QUIET_WINDOW or began > deadline:
            return began


def _percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
