"""The one list of commit observers: every durable batch goes through it, in order."""

from __future__ import annotations

from collections.abc import Callable

from ..history.events import Event
from ..history.state import ExecutionState

CommitObserver = Callable[[ExecutionState, list[Event], float], None]
"""Told of each batch once it is durable: the state, its events, the seconds the commit took."""


def observe_commits(*observers: CommitObserver) -> CommitObserver:
    """One observer that tells each of ``observers`` in turn."""
    chain = tuple(observers)

    def committed(state: ExecutionState, events: list[Event], seconds: float) -> None:
        for observer in chain:
            observer(state, events, seconds)

    return committed
