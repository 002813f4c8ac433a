"""Task functions as the worker SDK runs them: input and output converted from the function's
type hints with pydantic, failures turned into the protocol's ``error`` object."""

from __future__ import annotations

import contextvars
import dis
import inspect
import operator
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, get_type_hints

import trio
from pydantic import TypeAdapter, ValidationError
from pydantic_core import SchemaSerializer

from ..wire.server_fields import TaskFields
from . import logs

_ANY: TypeAdapter[Any] = TypeAdapter(Any)  # built once: building one costs ~100 us


class TaskFailed(Exception):
    """Raise from a task to report a failure with your own code (``retryable`` by default)."""

    def __init__(
        self,
        code: str,
        message: str = "",
        *,
        retryable: bool = True,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message
        self.retryable = retryable
        self.details = details

    def to_error(self) -> dict[str, Any]:
        """The protocol's ``error`` object."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        error["retryable"] = self.retryable
        if self.details is not None:
            error["details"] = self.details
        return error


@dataclass(frozen=True)
class TaskContext:
    """What a task knows about the unit it works on. Use ``idempotency_key`` to make side
    effects safe: a redelivered task (``redelivery`` true) carries the same key."""

    token: str
    execution_id: str
    workflow: str
    workflow_version: str
    step_id: str
    task_name: str
    contract_version: str
    idempotency_key: str
    attempt: int
    redelivery: bool
    deadline_ms: int | None = None
    timeout_ms: int | None = None

    @classmethod
    def of(cls, task: TaskFields) -> TaskContext:
        """The context of a pushed task's fields (every field but ``input`` carries over).
        Filled in through ``__dict__``: the frozen ``__init__`` sets each field with
        ``object.__setattr__`` and cost twice as much; the result is the same object."""
        ctx = object.__new__(cls)
        ctx.__dict__.update(zip(_CONTEXT_NAMES, _CONTEXT_FIELDS(task), strict=True))
        return ctx


# Read once: ``dataclasses.fields`` per task cost more than building the context.
_CONTEXT_NAMES = tuple(f.name for f in fields(TaskContext))
_CONTEXT_FIELDS = operator.itemgetter(*_CONTEXT_NAMES)


@dataclass
class TaskFunction:
    """A registered task: the function, whether it takes the context, and how its input and
    output are converted."""

    name: str
    version: str
    function: Callable[..., Any]
    takes_context: bool
    wants_input: bool
    input_adapter: TypeAdapter[Any] | None
    output_adapter: TypeAdapter[Any] | None
    is_async: bool = field(init=False)
    runs_at_once: bool = field(init=False)
    """An ``async def`` that never suspends (see :meth:`run_now`)."""
    _serializer: SchemaSerializer = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.is_async = inspect.iscoroutinefunction(self.function)
        self.runs_at_once = _never_suspends(self.function)
        # the adapter's own serializer: ``dump_python`` spelt out a dozen defaults per call
        self._serializer = (self.output_adapter or _ANY).serializer

    @classmethod
    def wrap(cls, name: str, version: str, function: Callable[..., Any]) -> TaskFunction:
        """Read ``function``'s signature: ``(ctx, input)``, ``(input)`` or ``()``."""
        hints = get_type_hints(function)
        params = list(inspect.signature(function).parameters.values())
        takes_context = bool(params) and (
            hints.get(params[0].name) is TaskContext or params[0].name in ("ctx", "context")
        )
        rest = params[1:] if takes_context else params
        if len(rest) > 1:
            raise TypeError(f"task {name}: a task takes (ctx, input), (input) or (ctx) only")
        input_hint = hints.get(rest[0].name) if rest else None
        output_hint = hints.get("return")
        return cls(
            name, version, function, takes_context, bool(rest),
            TypeAdapter(input_hint) if input_hint not in (None, Any) else None,
            TypeAdapter(output_hint) if output_hint not in (None, Any, type(None)) else None,
        )  # fmt: skip

    async def run(self, ctx: TaskContext, raw_input: Any) -> dict[str, Any]:
        """Run once; returns ``{"output": …}`` or ``{"error": …}``."""
        return await self._call(raw_input, ctx, ctx)

    async def run_pushed(self, task: TaskFields) -> dict[str, Any]:
        """:meth:`run` for a pushed task (its fields, as ``wire.server_fields`` decodes them),
        whose :class:`TaskContext` is built only when the function takes one."""
        return await self._call(task["input"],
                                TaskContext.of(task) if self.takes_context else None,
                                task)  # fmt: skip

    def run_now(self, task: TaskFields) -> dict[str, Any]:
        """:meth:`run_pushed` for a function that :attr:`runs_at_once`, run to its end in the
        caller's task, in a copy of its context as a task of its own would be: no task to
        spawn and no cancel scope, since a function with no checkpoint cannot be cancelled."""
        context = TaskContext.of(task) if self.takes_context else None
        coroutine = self._call(task["input"], context, task)
        try:
            contextvars.copy_context().run(coroutine.send, None)
        except StopIteration as done:
            outcome: dict[str, Any] = done.value
            return outcome
        coroutine.close()  # unreachable: nothing in its code can suspend it
        raise RuntimeError(f"task {self.name}@{self.version} suspended without an await")

    async def _call(
        self, raw_input: Any, ctx: TaskContext | None, about: TaskContext | TaskFields
    ) -> dict[str, Any]:
        """Run once; ``about`` (the context, or the task's fields) names the task in logs."""
        try:
            value = self._input(raw_input)
        except ValidationError as exc:
            return {"error": _invalid_input(exc)}
        args = ([ctx] if self.takes_context else []) + ([value] if self.wants_input else [])
        try:
            if self.is_async:
                result = await self.function(*args)
            else:
                result = await trio.to_thread.run_sync(
                    lambda: self.function(*args), abandon_on_cancel=True
                )
            return {"output": self._output(result)}
        except TaskFailed as exc:
            return {"error": exc.to_error()}
        except Exception as exc:
            names = about if isinstance(about, dict) else vars(about)
            logs.task_raised(f"{self.name}@{self.version}", names["execution_id"],
                             names["step_id"], names["attempt"])  # fmt: skip
            return {"error": _unexpected(exc)}

    def _input(self, raw: Any) -> Any:
        return self.input_adapter.validate_python(raw) if self.input_adapter else raw

    def _output(self, result: Any) -> Any:
        return self._serializer.to_python(result, mode="json")


_SUSPENDS = frozenset({"YIELD_VALUE", "SEND", "GET_AWAITABLE"})
"""The operations through which a coroutine's own code can suspend (every ``await``,
``async with`` and ``async for`` compiles to them)."""


def _never_suspends(function: Callable[..., Any]) -> bool:
    """True for an ``async def`` function whose own code never suspends: stepped once, its
    coroutine runs to its end. Anything else (a callable object, a wrapper) is False."""
    if not isinstance(function, types.FunctionType):
        return False
    code = function.__code__
    if not code.co_flags & inspect.CO_COROUTINE:
        return False
    return not any(op.opname in _SUSPENDS for op in dis.get_instructions(code))


def _invalid_input(exc: ValidationError) -> dict[str, Any]:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "input"
    return {
        "code": "INVALID_TASK_INPUT",
        "message": f"task input is invalid at {where}: {first['msg']}",
        "retryable": False,
    }


def _unexpected(exc: Exception) -> dict[str, Any]:
    return {
        "code": type(exc).__name__,
        "message": str(exc) or type(exc).__name__,
        "retryable": True,
        "details": {"traceback": traceback.format_exc(limit=5)[-2000:]},
    }
