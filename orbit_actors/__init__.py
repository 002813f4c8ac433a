"""Orbit: a durable workflow runtime built on trio actors.

The pure core: :mod:`orbit_actors.ir` (definitions), :mod:`orbit_actors.history` (events and
state) and :mod:`orbit_actors.decide` (the decider). Errors: :mod:`orbit_actors.errors`. The
worker SDK (:class:`Worker`, :class:`TaskContext`, :class:`TaskFailed`) and the API clients
(:class:`Client`, :class:`AsyncClient`) are imported on first use, so the core does not pull in
the network.
"""

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import DefinitionError, OrbitError, Problem
from .ir import CompiledDefinition, compile_ir, compile_source

if TYPE_CHECKING:
    from .client import ApiError, AsyncClient, Client
    from .worker import TaskContext, TaskFailed, Worker

_LAZY = {
    "Worker": "worker",
    "TaskContext": "worker",
    "TaskFailed": "worker",
    "Client": "client",
    "AsyncClient": "client",
    "ApiError": "client",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ApiError",
    "AsyncClient",
    "Client",
    "CompiledDefinition",
    "DefinitionError",
    "OrbitError",
    "Problem",
    "TaskContext",
    "TaskFailed",
    "Worker",
    "__version__",
    "compile_ir",
    "compile_source",
]
