"""The Python worker SDK (worker-protocol.md): :class:`Worker`, :class:`TaskContext`,
:class:`TaskFailed`. It imports only the protocol messages (:mod:`orbit_actors.wire`)."""

from .tasks import TaskContext, TaskFailed, TaskFunction
from .worker import Worker, WorkerRefused, default_url

__all__ = ["TaskContext", "TaskFailed", "TaskFunction", "Worker", "WorkerRefused", "default_url"]
