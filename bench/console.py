"""Benchmark of the web console in a real browser (Debian's chromium through Playwright): how
soon the executions page is interactive with 100,000 executions in the store, and how soon one
execution with a 1,000-element fan-out is drawn.

    python bench/console.py [--executions 100000] [--fan-out 1000] [--repeat 5]

The executions are written through the store API into the SQLite file before the server starts
(each one a real three-event history: created, started, then completed or failed, with its
summary row), which is what the server would have stored for them and takes seconds instead of
minutes; the fan-out execution is started through the API and run by a real worker.

A page counts as interactive when what a person came for is drawn (the first row of the list;
the fan-out's "1000/1000 succeeded" box and its timeline) and the main thread is free again (the
next animation frame has run), measured by the browser from the navigation's start
(``performance.now()``). Each page is loaded ``--repeat`` times; the median is reported. Ends
with one JSON line: ``{"executions_page_ms_100k", "fanout_1000_page_ms"}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import trio
from e2e import ROOT, start_server  # bench/e2e.py's server (a script's folder is on sys.path)

from orbit_actors.history.events import (
    EffectiveLimits,
    ErrorInfo,
    Event,
    WorkflowCompleted,
    WorkflowCreated,
    WorkflowFailed,
    WorkflowStarted,
)
from orbit_actors.ir import compile_source
from orbit_actors.store import Commit, DefinitionRecord, ExecutionRow, open_sqlite_store

LISTED = """
workflow: listed
version: 1.0.0
tasks: {noop: {version: "1"}}
steps: [{id: a, task: noop, input: {n: "${input.n}"}}]
"""
FANNED = """
workflow: fanned
version: 1.0.0
tasks: {noop: {version: "1"}}
limits: {max_fan_out: 5000}
steps:
  - {id: before, task: noop, input: {n: 0}}
  - {id: each, for: input.items, concurrency: 200, task: noop, input: {n: "${item}"}}
  - {id: after, task: noop, input: {n: "${size(steps.each.output)}"}}
"""
LIMITS = EffectiveLimits(max_fan_out=1000, max_history_events=50_000, max_payload_bytes=262_144)
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]  # fmt: skip
# Resolves once the next frame has been drawn and the task after it has run: the page has
# painted what it rendered and its main thread is free for input.
SETTLED = "() => new Promise((done) => requestAnimationFrame(() => setTimeout(() => done(performance.now()))))"


def _history(execution_id: str, compiled_hash: str, at: int, failed: bool) -> list[Event]:
    created = WorkflowCreated(
        seq=1, timestamp_ms=at, execution_id=execution_id, workflow="listed", version="1.0.0",
        definition_hash=compiled_hash, input={"n": at}, limits=LIMITS,
    )  # fmt: skip
    end: Event = (
        WorkflowFailed(seq=3, timestamp_ms=at + 20, compensation="none",
                       error=ErrorInfo(code="BROKEN", message="it broke", retryable=False))
        if failed
        else WorkflowCompleted(seq=3, timestamp_ms=at + 20, output={"n": at})
    )  # fmt: skip
    return [created, WorkflowStarted(seq=2, timestamp_ms=at), end]


async def populate(db: Path, count: int) -> None:
    """``count`` finished executions of ``listed`` and the definition, written to ``db``."""
    compiled = compile_source(LISTED)
    ir = json.dumps(compiled.ir.to_ir_dict(), sort_keys=True)
    first_ms = int(time.time() * 1000) - count * 10
    async with open_sqlite_store(db, synchronous="normal") as store:
        record = DefinitionRecord("listed", "1.0.0", compiled.definition_hash, ir, first_ms)
        await store.put_definition(record)

        async def writer(lane: int, lanes: int) -> None:
            for index in range(lane, count, lanes):
                execution_id, at, failed = (
                    f"listed-{index:06d}",
                    first_ms + index * 10,
                    index % 20 == 0,
                )
                row = ExecutionRow(
                    execution_id, "listed", "1.0.0", compiled.definition_hash,
                    "failed" if failed else "completed", 1, at, at + 20, last_seq=3,
                )  # fmt: skip
                events = _history(execution_id, compiled.definition_hash, at, failed)
                await store.commit(Commit(row, events, create=True))

        async with trio.open_nursery() as nursery:
            for lane in range(200):  # group commit batches the concurrent writers
                nursery.start_soon(writer, lane, 200)


def page_ms(page: Any, url: str, ready: str, repeat: int) -> float:
    """The median time (ms from navigation start) until ``ready`` holds and the page settled."""
    times = []
    for _ in range(repeat):
        page.goto("about:blank")
        page.goto(url)
        page.wait_for_function(ready, timeout=60_000, polling="raf")
        times.append(float(page.evaluate(SETTLED)))
    return statistics.median(times)


def measure(url: str, fanned_id: str, repeat: int, fan_out: int) -> dict[str, float]:
    """Both figures, in a fresh headless chromium."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
        )
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        listed = page_ms(
            page,
            f"{url}/#/executions",
            "() => document.querySelector('tbody tr a') !== null",
            repeat,
        )
        drawn = (f"() => (document.querySelector('.graph [data-step=\"each\"]')?.textContent || '')"
                 f".includes('{fan_out}/{fan_out} succeeded') && document.querySelector('.lanes .bar') !== null")  # fmt: skip
        fanned = page_ms(page, f"{url}/#/executions/{fanned_id}", drawn, repeat)
        browser.close()
    return {"executions_page_ms_100k": round(listed, 1), "fanout_1000_page_ms": round(fanned, 1)}


def run_fan_out(url: str, fan_out: int) -> str:
    """Deploy ``fanned``, run one execution of ``fan_out`` elements to its end; its id."""
    with httpx.Client(base_url=url, timeout=120) as client:
        client.post(
            "/v1/definitions", content=FANNED, headers={"Content-Type": "application/yaml"}
        ).raise_for_status()
        started = client.post(
            "/v1/executions", json={"workflow": "fanned", "input": {"items": list(range(fan_out))}}
        )
        execution_id = str(started.json()["execution_id"])
        done = client.get(f"/v1/executions/{execution_id}/wait", params={"timeout": 60}).json()
        assert done["status"] == "completed", done
    return execution_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--executions", type=int, default=100_000)
    parser.add_argument("--fan-out", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        began = time.perf_counter()
        trio.run(populate, Path(folder) / "bench.db", args.executions)
        print(
            f"{args.executions} executions stored in {time.perf_counter() - began:.1f} s",
            file=sys.stderr,
        )
        server, url = start_server(Path(folder))
        worker = subprocess.Popen([sys.executable, str(ROOT / "bench" / "noop_worker.py")],
                                  env={**_env(), "ORBIT_URL": url}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            fanned_id = run_fan_out(url, args.fan_out)
            figures = measure(url, fanned_id, args.repeat, args.fan_out)
        finally:
            worker.terminate()
            server.terminate()
            worker.wait(30)
            server.wait(30)
    print(f"executions page with {args.executions}: {figures['executions_page_ms_100k']} ms; "
          f"a {args.fan_out}-element fan-out: {figures['fanout_1000_page_ms']} ms", file=sys.stderr)  # fmt: skip
    print(json.dumps(figures))


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


if __name__ == "__main__":
    main()
