"""Every endpoint as a method of both clients, defined once.

An :class:`Endpoint` wraps a builder of :mod:`orbit_actors.api.calls`; read on a client it is a
method that builds the call and hands it to the client's ``send``. Its type follows the client:
on a :class:`SyncSender` the method answers the model, on an :class:`AsyncSender` it answers an
awaitable of it.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Coroutine
from typing import Any, Generic, ParamSpec, TypeVar, overload

from ..api import batch_calls, calls
from ..api.calls import Call

P = ParamSpec("P")
T = TypeVar("T")


class SyncSender(abc.ABC):
    """A client that sends a call and blocks for its answer."""

    @abc.abstractmethod
    def send(self, call: Call[T]) -> T:
        """Send ``call``; its answer, or :class:`~orbit_actors.client.ApiError`."""


class AsyncSender(abc.ABC):
    """A client that sends a call and awaits its answer."""

    @abc.abstractmethod
    async def send(self, call: Call[T]) -> T:
        """Send ``call``; its answer, or :class:`~orbit_actors.client.ApiError`."""


class Endpoint(Generic[P, T]):
    """The method of every client for one endpoint: the builder's parameters, its answer."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Endpoint[P, T]: ...
    @overload
    def __get__(self, client: SyncSender, owner: type[Any]) -> Callable[P, T]: ...
    @overload
    def __get__(
        self, client: AsyncSender, owner: type[Any]
    ) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, client: Any, owner: type[Any]) -> Any:
        if client is None:
            return self
        build, send = self.build, client.send

        def method(*args: P.args, **kwargs: P.kwargs) -> Any:
            return send(build(*args, **kwargs))

        method.__name__ = method.__qualname__ = build.__name__
        method.__doc__ = build.__doc__
        return method


class Endpoints:
    """The API's endpoints as methods (http-api.md); a subclass says how calls are sent."""

    deploy = Endpoint(calls.deploy)
    definitions = Endpoint(calls.definitions)
    definition = Endpoint(calls.definition)
    check = Endpoint(calls.check)
    migrate = Endpoint(calls.migrate)
    replay = Endpoint(calls.replay)
    start = Endpoint(calls.start)
    executions = Endpoint(calls.executions)
    describe = Endpoint(calls.describe)
    history = Endpoint(calls.history)
    wait = Endpoint(calls.wait)
    cancel = Endpoint(calls.cancel)
    resume = Endpoint(calls.resume)
    terminate = Endpoint(calls.terminate)
    pause = Endpoint(calls.pause)
    unpause = Endpoint(calls.unpause)
    rerun = Endpoint(calls.rerun)
    rerun_plan = Endpoint(calls.rerun_plan)
    signal = Endpoint(calls.signal)
    query = Endpoint(calls.query)
    create_batch = Endpoint(batch_calls.create_batch)
    batch_preview = Endpoint(batch_calls.batch_preview)
    batch = Endpoint(batch_calls.batch)
    batches = Endpoint(batch_calls.batches)
    cancel_batch = Endpoint(batch_calls.cancel_batch)
    create_schedule = Endpoint(calls.create_schedule)
    schedules = Endpoint(calls.schedules)
    schedule = Endpoint(calls.schedule)
    delete_schedule = Endpoint(calls.delete_schedule)
    pause_schedule = Endpoint(calls.pause_schedule)
    resume_schedule = Endpoint(calls.resume_schedule)
    trigger_schedule = Endpoint(calls.trigger_schedule)
    workers = Endpoint(calls.workers)
    delete = Endpoint(calls.delete)
    tasks = Endpoint(calls.tasks)
    servers = Endpoint(calls.servers)
    complete_task = Endpoint(calls.complete_task)
    fail_task = Endpoint(calls.fail_task)
