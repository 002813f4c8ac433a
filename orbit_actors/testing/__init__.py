"""Helpers shipped for tests of Orbit and of code built on it."""

from .driver import Driver
from .fake_worker import FakeWorker, TaskFailure
from .memory_store import MemoryStore

__all__ = ["Driver", "FakeWorker", "MemoryStore", "TaskFailure"]
