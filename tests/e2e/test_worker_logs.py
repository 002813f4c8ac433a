"""The worker SDK says what happens (logger ``orbit.worker``), against a real server: whom it
connected to with which session and contracts, a failed or lost connection with the reason and
the next try, a task that raised with its traceback, draining; and a refused worker says why."""

from __future__ import annotations

import logging
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from orbit_actors.worker import TaskContext, Worker, WorkerRefused

from .harness import ServerProcess
from .test_sdk import run_one, running, url, ws

__all__ = ["url"]  # the fixture, imported to be used here

TOKEN = "worker-secret"


class _Watch(logging.Handler):
    """Sets a trio event when a record of ``orbit.worker`` contains ``text`` (the worker logs
    from its own trio task, so the event is set on the test's thread)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text, self.seen = text, trio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()


@asynccontextmanager
async def watching(text: str) -> AsyncIterator[_Watch]:
    watch = _Watch(text)
    logger = logging.getLogger("orbit.worker")
    logger.addHandler(watch)
    try:
        yield watch
    finally:
        logger.removeHandler(watch)


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "orbit.worker"]


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path, "--worker-token", TOKEN).start()
    yield server
    server.stop()


async def test_connecting_names_the_server_session_and_contracts(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "orbit.worker")
    worker = Worker(ws(url), worker_id="w-logs")
    worker.task("echo")(lambda value: value)
    worker.task("other", version="2")(lambda value: value)
    async with running(worker):
        pass
    assert messages(caplog) == [
        f"connected to {ws(url)} as w-logs (session {worker.session_id}); serving echo@1, other@2"
    ]


async def test_a_task_that_raised_is_logged_with_its_traceback(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    worker = Worker(ws(url), worker_id="buggy")

    @worker.task("broken")
    async def broken(ctx: TaskContext) -> None:
        raise ValueError("bad value")

    async with running(worker):
        detail = await run_one(url, "broken", "{}")
    raised = [r for r in caplog.records if r.getMessage().startswith("task broken@1 raised")]
    assert len(raised) == 2  # two attempts
    assert f"in execution {detail['execution_id']}, step s, attempt 1" in raised[0].getMessage()
    assert raised[0].exc_info is not None and raised[0].exc_info[0] is ValueError
    assert "ValueError: bad value" in caplog.text  # the traceback is in the log


async def test_draining_is_logged(url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "orbit.worker")
    worker = Worker(ws(url), worker_id="drains")
    worker.task("echo")(lambda value: value)
    async with running(worker):
        await worker.drain()
    assert "draining: taking no new tasks, finishing 0 running (Ctrl-C again stops now)" in (
        messages(caplog)
    )


async def test_the_refusal_line_reads_connection_refused_at_the_address(
    caplog: pytest.LogCaptureFixture,
) -> None:
    worker = Worker("ws://127.0.0.1:1", worker_id="nowhere")
    worker.task("echo")(lambda value: value)
    async with watching("cannot connect") as watch, trio.open_nursery() as nursery:
        nursery.start_soon(worker.serve)
        with trio.fail_after(30):
            await watch.seen.wait()
        nursery.cancel_scope.cancel()
    [first, *_] = messages(caplog)
    assert first.startswith(
        "cannot connect to ws://127.0.0.1:1: connection refused at 127.0.0.1:1 "
        "(is the server running?); next try in "
    ) and first.endswith(" s")


async def test_a_lost_connection_says_why_and_reconnects(
    guarded: ServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "orbit.worker")
    worker = Worker(ws(guarded.url), worker_id="lost", token=TOKEN)
    worker.task("echo")(lambda value: value)
    async with watching("cannot connect") as watch, running(worker):
        guarded.kill(signal.SIGKILL)
        with trio.fail_after(30):
            await watch.seen.wait()
    lost = [m for m in messages(caplog) if m.startswith(f"connection to {ws(guarded.url)} lost: ")]
    assert len(lost) == 1 and "; reconnecting in " in lost[0]


async def test_a_wrong_worker_token_stops_the_worker_saying_why(guarded: ServerProcess) -> None:
    for token, why in (("wrong", "401: the worker token is wrong"),
                       (None, "401: the server wants a worker token")):  # fmt: skip
        worker = Worker(ws(guarded.url), worker_id="intruder", token=token or "")
        worker.token = token
        worker.task("echo")(lambda value: value)
        with trio.fail_after(30), pytest.raises(WorkerRefused) as refused:
            await worker.serve()
        assert str(refused.value).startswith(why)


def test_orbit_worker_prints_the_refusal_and_exits_1(guarded: ServerProcess) -> None:
    import subprocess
    import sys

    from .harness import ROOT

    result = subprocess.run(
        [sys.executable, "-m", "orbit_actors.cli", "worker", "tests.e2e.e2e_workers:worker"],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
        env={"ORBIT_URL": guarded.url, "ORBIT_WORKER_TOKEN": "wrong", "PATH": "/usr/bin:/bin",
             "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip().endswith(
        "error: the server refused the worker: 401: the worker token is wrong "
        "(ORBIT_WORKER_TOKEN or Worker(token=...))"
    )
