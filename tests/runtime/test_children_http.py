"""Child workflows and the built-in http runner through the runtime."""

from __future__ import annotations

import json

import trio
from trio.testing import MockClock

from orbit_actors.runtime import Runtime, RuntimeConfig, open_runtime
from orbit_actors.testing import FakeWorker, MemoryStore

from .conftest import workflow

CHILD = workflow(
    """
input: {type: object, properties: {n: {type: integer}}}
steps: [{id: work, task: t, input: {n: "${input.n}"}}]
output: {doubled: "${steps.work.output.n * 2}"}
""",
    name="kid",
)
PARENT = workflow(
    """
workflows: {kid: {version: 1.0.0}}
steps:
  - {id: each, for: "[1, 2, 3]", as: n, workflow: kid, input: {n: "${n}"}}
output: "${steps.each.output.map(o, o.doubled)}"
""",
    name="parent",
)


async def test_a_parent_waits_for_its_children_and_gets_their_outputs(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(CHILD)
    await runtime.register_definition(PARENT)
    worker = FakeWorker(runtime, "w1", [("t", "1")])
    async with trio.open_nursery() as nursery:
        await nursery.start(worker.serve)
        await runtime.start("parent", execution_id="order-7")
        row = await runtime.wait("order-7", 60)
        assert row.status == "completed"
        assert (await runtime.describe("order-7")).output == [2, 4, 6]
        child = await runtime.store.execution("order-7.each.1")
        assert child is not None and child.parent_id == "order-7" and child.status == "completed"
        nursery.cancel_scope.cancel()


async def test_children_are_cancelled_when_the_parent_aborts(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(CHILD)
    await runtime.register_definition(PARENT)
    await runtime.start("parent", execution_id="p")
    await trio.testing.wait_all_tasks_blocked()
    assert (await runtime.describe("p.each.0")).status == "running"
    await runtime.cancel("p", "stop")
    await trio.testing.wait_all_tasks_blocked()
    for index in range(3):
        assert (await runtime.describe(f"p.each.{index}")).status == "cancelled"


async def test_a_child_that_cannot_start_fails_the_parents_unit(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(
        CHILD.replace(
            "properties: {n: {type: integer}}",
            "required: [m], properties: {n: {type: integer}, m: {type: string}}",
        )
    )
    await runtime.register_definition(PARENT)
    await runtime.start("parent", execution_id="p")
    row = await runtime.wait("p", 60)
    assert row.status == "failed"
    detail = await runtime.describe("p")
    assert detail.error is not None and detail.error.code == "CHILD_START_FAILED"


HTTP = workflow("""
input: {type: object, properties: {url: {type: string}}}
steps:
  - {id: call, http: {method: POST, url: "${input.url}", body: {hello: world}}, retry: {max_attempts: 1}}
output: "${steps.call.output.body}"
""")


async def test_without_the_adapter_an_http_step_fails_with_adapter_disabled(
    runtime: Runtime, autojump_clock: MockClock
) -> None:
    await runtime.register_definition(HTTP)
    await runtime.start("wf", input={"url": "http://127.0.0.1:9/"}, execution_id="h")
    row = await runtime.wait("h", 60)
    assert row.status == "failed"
    error = (await runtime.describe("h")).error
    assert error is not None and error.code == "ADAPTER_DISABLED"


async def serve_http(
    status: int, body: bytes, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED
) -> None:
    """A tiny HTTP server on a loopback port (reports the port)."""

    async def handle(stream: trio.SocketStream) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            data += await stream.receive_some(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(
            next(
                line.split(b":")[1]
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
        )
        while len(rest) < length:
            rest += await stream.receive_some(65536)
        reply = json.dumps({"echo": json.loads(rest)}).encode() if status < 300 else body
        await stream.send_all(
            b"HTTP/1.1 %d X\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s"
            % (status, len(reply), reply)
        )
        await stream.aclose()

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(handle, listeners)


async def test_the_adapter_calls_the_url_and_returns_the_parsed_body() -> None:
    async with (
        open_runtime(MemoryStore(), RuntimeConfig(enable_http_adapter=True)) as runtime,
        trio.open_nursery() as nursery,
    ):
        port = await nursery.start(serve_http, 200, b"")
        await runtime.register_definition(HTTP)
        await runtime.start("wf", input={"url": f"http://127.0.0.1:{port}/hook"}, execution_id="h")
        with trio.fail_after(30):
            row = await runtime.wait("h", 30)
        assert row.status == "completed"
        assert (await runtime.describe("h")).output == {"echo": {"hello": "world"}}
        nursery.cancel_scope.cancel()


async def test_a_4xx_is_a_non_retryable_http_status_with_its_code() -> None:
    async with (
        open_runtime(MemoryStore(), RuntimeConfig(enable_http_adapter=True)) as runtime,
        trio.open_nursery() as nursery,
    ):
        port = await nursery.start(serve_http, 404, b"{}")
        await runtime.register_definition(HTTP.replace("max_attempts: 1", "max_attempts: 3"))
        await runtime.start("wf", input={"url": f"http://127.0.0.1:{port}/"}, execution_id="h")
        with trio.fail_after(30):
            await runtime.wait("h", 30)
        error = (await runtime.describe("h")).error
        assert error is not None
        assert (error.code, error.retryable, error.details) == (
            "HTTP_STATUS",
            False,
            {"status": 404},
        )
        nursery.cancel_scope.cancel()
