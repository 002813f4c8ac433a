"""Durability and recovery on a real SQLite file and the real clock: a runtime closed mid-flight
and opened again on the same file finishes every execution; tokens in flight wait for their
session to come back for the session timeout counted from the restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from orbit_actors.runtime import RuntimeConfig, open_runtime
from orbit_actors.store import open_sqlite_store
from orbit_actors.testing import FakeWorker
from orbit_actors.wire import messages as wire

from .conftest import workflow

SIGNALLED = workflow(
    "signals: {go: null}\nsteps: [{id: a, task: t, input: {i: '${input.i}'}}, {id: w, await: go}]\n"
)
TWO = workflow(
    "steps: [{id: a, task: t, input: {i: '${input.i}'}}, {id: b, task: t2}]\noutput: {i: '${steps.a.output.i}'}\n"
)


async def test_closing_mid_flight_and_reopening_finishes_everything(tmp_path: Path) -> None:
    path = tmp_path / "orbit.db"
    with trio.fail_after(60):
        async with open_sqlite_store(path) as store, open_runtime(store) as runtime:
            await runtime.register_definition(TWO)
            for i in range(50):
                await runtime.start("wf", input={"i": i}, execution_id=f"e{i}")
            half = FakeWorker(runtime, "w1", [("t", "1")])  # serves only the first step
            async with trio.open_nursery() as nursery:
                await nursery.start(half.serve)
                await half.wait_for_tasks(50)
                await trio.sleep(0.2)  # some of the answers become durable, some do not
                nursery.cancel_scope.cancel()
        async with open_sqlite_store(path) as store, open_runtime(store) as runtime:
            assert len(runtime.supervisor.registry) == 50  # recovered before the runtime is yielded
            worker = FakeWorker(runtime, "w2", [("t", "1"), ("t2", "1")])
            async with trio.open_nursery() as nursery:
                await nursery.start(worker.serve)
                for i in range(50):
                    assert (await runtime.wait(f"e{i}", 30)).status == "completed"
                nursery.cancel_scope.cancel()
            assert (await runtime.describe("e7")).output == {"i": 7}


async def test_a_worker_resuming_its_session_after_a_restart_reports_its_task(
    tmp_path: Path,
) -> None:
    path = tmp_path / "orbit.db"
    config = RuntimeConfig(session_timeout_ms=5000)
    with trio.fail_after(60):
        async with open_sqlite_store(path) as store, open_runtime(store, config) as runtime:
            await runtime.register_definition(TWO)
            await runtime.start("wf", input={"i": 1}, execution_id="e")
            worker = FakeWorker(runtime, "w1", [("t", "1")], auto=False)
            async with trio.open_nursery() as nursery:
                await nursery.start(worker.serve)
                await worker.first_task()
                nursery.cancel_scope.cancel()
            task, session_id = worker.tasks[0], worker.session_id
        async with open_sqlite_store(path) as store, open_runtime(store, config) as runtime:
            back = FakeWorker(runtime, "w1", [("t", "1")])
            answer = await back.register(resume=session_id)
            assert isinstance(answer, wire.Registered) and answer.resumed
            # its frame may have been lost: it comes again, after the answer, or once its
            # execution is back when the worker resumed before that (recovery runs behind)
            pushed_again = await back.wait_for_tasks(1, within=10)
            assert [t.token for t in pushed_again] == [task.token]
            ack = await back.complete(task.token, {"i": 1})
            assert isinstance(ack, wire.Ack) and ack.accepted
            history = await runtime.history("e")
            assert not [e for e in history if e.type == "StepAttemptUncertain"]


async def test_a_worker_resuming_while_a_command_brings_its_execution_back_keeps_its_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "orbit.db"
    config = RuntimeConfig(session_timeout_ms=5000)
    with trio.fail_after(60):
        async with open_sqlite_store(path) as store, open_runtime(store, config) as runtime:
            await runtime.register_definition(SIGNALLED)
            await runtime.start("wf", input={"i": 1}, execution_id="e")
            worker = FakeWorker(runtime, "w1", [("t", "1")], auto=False)
            async with trio.open_nursery() as nursery:
                await nursery.start(worker.serve)
                task = await worker.first_task()
                nursery.cancel_scope.cancel()
        async with open_sqlite_store(path) as store:
            slowly(monkeypatch, store, "histories", 0.3)  # what recovery reads
            slowly(monkeypatch, store, "history", 1.0)  # what a command's wake-up reads
            async with open_runtime(store, config) as runtime, trio.open_nursery() as nursery:
                nursery.start_soon(runtime.signal, "e", "go", None)  # e comes back for it
                await trio.sleep(0.6)  # the other busy executions are back (there are none)
                back = FakeWorker(runtime, "w1", [("t", "1")])
                answer = await back.register(resume=worker.session_id)
                assert isinstance(answer, wire.Registered) and answer.resumed
                assert [t.token for t in await back.wait_for_tasks(1, within=10)] == [task.token]


def slowly(monkeypatch: pytest.MonkeyPatch, store: Any, name: str, seconds: float) -> None:
    """Make the store's read ``name`` take ``seconds`` longer."""
    read = getattr(store, name)

    async def slow(*args: Any) -> Any:
        await trio.sleep(seconds)
        return await read(*args)

    monkeypatch.setattr(store, name, slow)


async def test_a_session_that_does_not_come_back_makes_its_tokens_uncertain(tmp_path: Path) -> None:
    path = tmp_path / "orbit.db"
    config = RuntimeConfig(session_timeout_ms=300, heartbeat_interval_ms=100)
    with trio.fail_after(60):
        async with open_sqlite_store(path) as store, open_runtime(store, config) as runtime:
            await runtime.register_definition(TWO)
            await runtime.start("wf", input={"i": 1}, execution_id="e")
            worker = FakeWorker(runtime, "w1", [("t", "1")], auto=False)
            async with trio.open_nursery() as nursery:
                await nursery.start(worker.serve)
                await worker.first_task()
                nursery.cancel_scope.cancel()
        async with open_sqlite_store(path) as store, open_runtime(store, config) as runtime:
            rescuer = FakeWorker(runtime, "w2", [("t", "1"), ("t2", "1")])
            async with trio.open_nursery() as nursery:
                await nursery.start(rescuer.serve)
                assert (await runtime.wait("e", 30)).status == "completed"
                nursery.cancel_scope.cancel()
            assert rescuer.tasks[0].redelivery and rescuer.tasks[0].idempotency_key == "e/1/a"
            reasons = [
                e.reason for e in await runtime.history("e") if e.type == "StepAttemptUncertain"
            ]
            assert reasons == ["worker `w1` stopped responding"]


async def test_a_commit_failure_leaves_memory_as_durable_and_the_caller_gets_storage_error(
    tmp_path: Path,
) -> None:
    from orbit_actors.errors import StorageError
    from orbit_actors.testing import MemoryStore

    store = MemoryStore()
    with trio.fail_after(30):
        async with open_runtime(store) as runtime:
            await runtime.register_definition(
                workflow("signals: {go: null}\nsteps: [{id: w, await: go}]\n")
            )
            await runtime.start("wf", execution_id="e")
            await trio.testing.wait_all_tasks_blocked()
            store.fail_next_commit = "disk full"
            try:
                await runtime.signal("e", "go", 1)
            except StorageError as exc:
                assert "disk full" in exc.message
            else:
                raise AssertionError("the signal should have failed")
            assert (await runtime.describe("e")).pending_signals == []
            await runtime.signal("e", "go", 2)
            assert (await runtime.wait("e", 10)).status == "completed"


async def test_a_builtin_http_attempt_cut_by_a_restart_is_uncertain_and_runs_again(
    tmp_path: Path,
) -> None:
    calls: list[int] = []
    called = trio.Event()

    async def handle(stream: trio.SocketStream) -> None:
        calls.append(1)
        called.set()
        data = b""
        while b"\r\n\r\n" not in data:
            data += await stream.receive_some(65536)
        if len(calls) == 1:
            await trio.sleep_forever()  # the first attempt never answers: the server goes down
        body = b'{"ok": true}'
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s"
            % (len(body), body)
        )
        await stream.aclose()

    path = tmp_path / "orbit.db"
    config = RuntimeConfig(enable_http_adapter=True)
    text = workflow(
        "input: {type: object, properties: {url: {type: string}}}\nsteps: [{id: call, http: {url: '${input.url}', timeout: 60s}}]\noutput: '${steps.call.output.body}'\n"
    )
    with trio.fail_after(60):
        async with trio.open_nursery() as servers:
            listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
            port = listeners[0].socket.getsockname()[1]
            servers.start_soon(trio.serve_listeners, handle, listeners)
            async with open_sqlite_store(path) as store, open_runtime(store, config) as runtime:
                await runtime.register_definition(text)
                await runtime.start(
                    "wf", input={"url": f"http://127.0.0.1:{port}/"}, execution_id="h"
                )
                await called.wait()
            async with open_sqlite_store(path) as store, open_runtime(store, config) as runtime:
                assert (await runtime.wait("h", 30)).status == "completed"
                history = await runtime.history("h")
                [uncertain] = [e for e in history if e.type == "StepAttemptUncertain"]
                assert uncertain.reason == "runtime restarted while the built-in task was running"
                assert (await runtime.describe("h")).output == {"ok": True}
            servers.cancel_scope.cancel()
