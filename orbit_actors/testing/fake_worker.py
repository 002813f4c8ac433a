"""A worker that lives in the test's trio loop and talks to a runtime's session layer directly
(no socket): it registers, receives tasks, and answers them with a handler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from ..wire import messages as wire

Handler = Callable[[wire.Task], Awaitable[Any]]


class TaskFailure(Exception):
    """Raised by a handler to report a failure."""

    def __init__(self, code: str, message: str = "failed", retryable: bool = True) -> None:
        super().__init__(message)
        self.code, self.message, self.retryable = code, message, retryable


class FakeWorker:
    """Serve ``contracts`` with ``handler`` (default: echo the input) until cancelled."""

    def __init__(
        self,
        runtime: Any,
        worker_id: str = "w1",
        contracts: list[tuple[str, str]] | None = None,
        handler: Handler | None = None,
        *,
        concurrency: int = 100,
        runtime_name: str = "python",
        auto: bool = True,
        heartbeat: bool = True,
    ) -> None:
        self.runtime = runtime
        self.worker_id = worker_id
        self.contracts = contracts or [("t", "1")]
        self.handler = handler or _echo
        self.concurrency = concurrency
        self.runtime_name = runtime_name
        self.received: list[wire.ServerMessage] = []
        self.tasks: list[wire.Task] = []
        self.session_id: str | None = None
        self._answering: trio.Nursery | None = None  # while serve() runs
        self._echoes: list[wire.Task] = []  # tasks the echo answers at its next wake-up
        self._echo_wakes = trio.lowlevel.ParkingLot()
        self._unanswered: list[wire.Task] = []  # tasks that came before serve() could answer
        self._waiting: list[tuple[int, trio.Event]] = []  # (tasks awaited, set when come)
        self.connection = runtime.connect(self._deliver)
        self.auto = auto  # answer tasks as they come; False leaves them to the test
        self.heartbeat = heartbeat  # send heartbeats as the SDK does; False plays a hung worker

    def _deliver(self, message: wire.ServerMessage) -> None:
        """What the session pushes; a task is answered at once: by the echo's own task (see
        :meth:`_echo_all`), or by the handler in a task of its own (no channel and loop in
        between: in a benchmark, this worker's cost is not the runtime's)."""
        self.received.append(message)
        if isinstance(message, wire.Task):
            self.tasks.append(message)
            for count, arrived in self._waiting:
                if len(self.tasks) >= count:
                    arrived.set()
            if not self.auto:
                return
            if self._answering is None:
                self._unanswered.append(message)
            else:
                self._answer_soon(self._answering, message)

    def _answer_soon(self, nursery: trio.Nursery, task: wire.Task) -> None:
        if self.handler is not _echo:
            nursery.start_soon(self.answer, task)
            return
        self._echoes.append(task)
        if len(self._echoes) == 1:
            self._echo_wakes.unpark()

    async def register(self, resume: str | None = None) -> wire.ServerMessage:
        """Register (or resume) and return the answer."""
        message = wire.Register(
            type="register", worker_id=self.worker_id, runtime=self.runtime_name, sdk="fake/1",
            concurrency=self.concurrency,
            contracts=[wire.Contract(task_name=t, contract_version=v) for t, v in self.contracts],
            resume_session_id=resume,
        )  # fmt: skip
        before = len(self.received)
        await self.connection.handle(message)
        answer = self.received[before]  # tasks pushed again on a resume come after the answer
        if isinstance(answer, wire.Registered):
            self.session_id = answer.worker_session_id
        return answer

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Register, then answer tasks as they come (when ``auto``)."""
        answer = await self.register()
        async with trio.open_nursery() as nursery:
            if self.heartbeat and isinstance(answer, wire.Registered):
                nursery.start_soon(self._beat, answer.heartbeat_interval_ms / 1000)
            nursery.start_soon(self._echo_all, nursery)
            self._answering = nursery
            for task in self._unanswered:
                self._answer_soon(nursery, task)
            self._unanswered.clear()
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self._answering = None

    async def first_task(self, within: float = 3600.0) -> wire.Task:
        """The first task pushed to this worker; fails after ``within`` seconds (virtual under a
        MockClock) instead of hanging a test."""
        return (await self.wait_for_tasks(1, within))[0]

    async def wait_for_tasks(self, count: int, within: float = 3600.0) -> list[wire.Task]:
        """The first ``count`` tasks pushed to this worker, once they have come; fails after
        ``within`` seconds (virtual under a MockClock)."""
        with trio.fail_after(within):
            if len(self.tasks) < count:
                arrived = trio.Event()
                self._waiting.append((count, arrived))
                await arrived.wait()
        return self.tasks[:count]

    async def _beat(self, interval: float) -> None:
        while self.connection.session is not None:
            await trio.sleep(interval)
            await self.connection.handle(wire.Heartbeat(type="heartbeat"))

    async def _echo_all(self, nursery: trio.Nursery) -> None:
        """Answer the tasks of the default handler, all those that came since its last wake-up
        at each: the echo never waits, so one task of this worker does what a task per answer
        did (their spawns and steps were 3% of bench/cpu.py's instructions, not the runtime's). A
        result that :meth:`Connection.report_soon` cannot carry is handled in a task of its own,
        as :meth:`answer` would: this task never waits for a verdict."""
        while True:
            while not self._echoes:
                await self._echo_wakes.park()
            tasks, self._echoes = self._echoes, []
            for task in tasks:
                result = wire.Complete(type="complete", token=task.token, output=task.input)
                if not self.connection.report_soon(result, _nothing):
                    nursery.start_soon(self.connection.handle, result)

    async def answer(self, task: wire.Task) -> None:
        """Run the handler on ``task`` and report its outcome."""
        try:
            output = await self.handler(task)
        except TaskFailure as exc:
            error = wire.FailError(code=exc.code, message=exc.message, retryable=exc.retryable)
            await self.connection.handle(wire.Fail(type="fail", token=task.token, error=error))
            return
        result = wire.Complete(type="complete", token=task.token, output=output)
        if not self.connection.report_soon(result, _nothing):  # as the gateway hands results on
            await self.connection.handle(result)

    async def complete(self, token: str, output: Any = None) -> wire.ServerMessage:
        """Send a result by hand; returns the answer."""
        await self.connection.handle(wire.Complete(type="complete", token=token, output=output))
        return self.received[-1]


async def _echo(task: wire.Task) -> Any:
    return task.input


def _nothing() -> None:
    """A result answered: nothing more to do (the answer itself is delivered)."""
