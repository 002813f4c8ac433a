"""Bursts of any size are served (http-api.md, "Connection limits"): 5,000 clients arriving at
once, each starting an execution and waiting for its output in one request, on the server's
default flags, with a worker that takes its whole concurrency of 2,000 at once. No connection is
refused and the worker is never closed for the tasks it was given; every output is checked."""

from __future__ import annotations

import asyncio
import concurrent.futures
import resource
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from .conftest import ECHO3
from .harness import ServerProcess, WorkerProcess, wait_until

BURST = 5000
CONCURRENCY = 2000


def _enough_descriptors(wanted: int) -> None:
    """The client opens one connection per request: raise this process's open-file limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < wanted:
        pytest.skip(f"this machine allows {hard} open files; the burst's client needs {wanted}")


async def _burst(url: str, total: int) -> list[tuple[int, dict[str, Any]]]:
    """``total`` executions at once from one aiohttp client (no connection limit: one
    connection per request in flight), each ``POST /v1/executions?wait=60``; an execution
    still running when its wait passed (a machine busy with other work) is waited for again
    with ``GET …/wait``."""
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(url, connector=connector, timeout=timeout) as session:

        async def one(n: int) -> tuple[int, dict[str, Any]]:
            body = {"workflow": "three", "input": {"n": n}}
            async with session.post("/v1/executions?wait=60", json=body) as answer:
                status, result = answer.status, await answer.json()
            execution_id = result.get("execution_id")
            while result.get("status") == "running" or "WAIT_TIMEOUT" in str(result):
                path = f"/v1/executions/{execution_id}/wait?timeout=60"
                async with session.get(path) as answer:
                    result = await answer.json()
            return status, result

        return await asyncio.gather(*(one(n) for n in range(total)))


def test_a_burst_of_5000_one_request_executions_is_served_on_the_default_flags(
    tmp_path: Path,
) -> None:
    _enough_descriptors(BURST + 256)
    server = ServerProcess(tmp_path).start()
    worker = WorkerProcess(server, "burst", env={"E2E_CONCURRENCY": str(CONCURRENCY)})
    try:
        with server.client() as client:
            client.deploy(ECHO3)
            wait_until(lambda: any(w.online for w in client.workers()), what="the worker")
        # a thread of its own: a test before it in the same process (Playwright's sync API)
        # may leave an event loop set on this one
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            answers = pool.submit(asyncio.run, _burst(server.url, BURST)).result()
        assert [status for status, _ in answers] == [201] * BURST
        for n, (_, body) in enumerate(answers):
            assert body["status"] == "completed", body
            assert body["output"] == {"n": n}, body
            assert body["error"] is None
        with server.client() as client:
            (online,) = client.workers()
            assert online.online and online.sessions == 1  # never closed and reconnected
        assert "not reading" not in server.log_text()
    finally:
        worker.stop()
        server.stop()
