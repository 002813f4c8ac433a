"""The ready queue of one task queue once flow control is declared: by priority (1 first), then
round robin across concurrency keys, then oldest.

The pool keeps a plain deque per task queue while every unit in it is of priority 5 without a
key (the order is then simply the oldest first, and nothing here costs anything); the first unit
that says otherwise turns that queue into a :class:`FlowQueue`. Both answer the same few calls
(``append``, ``popleft``, ``[0]``, ``len``), and both order units by ``rank``, which puts the
priority before the arrival number, so the pool comparing the heads of several queues also
serves a higher priority first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Generic, Protocol, TypeVar

DEFAULT_PRIORITY = 5
RANK_SHIFT = 48
"""A unit's rank is ``priority << RANK_SHIFT | arrival number``: the priority decides first."""


def rank(priority: int, arrival: int) -> int:
    """The order key of a unit: priority first, then arrival."""
    return priority << RANK_SHIFT | arrival


class Queued(Protocol):
    """What a queued unit tells the queue about itself."""

    @property
    def order(self) -> int:
        """Its rank (:func:`rank`)."""
        ...

    @property
    def flow_key(self) -> str | None:
        """Its execution's concurrency key (None: none)."""
        ...


Q = TypeVar("Q", bound=Queued)


class _Level(Generic[Q]):
    """The units of one priority: a rotation of keys, each with its units oldest first."""

    __slots__ = ("keys",)

    def __init__(self) -> None:
        self.keys: dict[str | None, deque[Q]] = {}  # insertion order is the rotation

    def head(self) -> Q:
        return self.keys[next(iter(self.keys))][0]

    def pop(self) -> Q:
        key = next(iter(self.keys))
        units = self.keys.pop(key)
        unit = units.popleft()
        if units:
            self.keys[key] = units  # to the back of the rotation
        return unit


class FlowQueue(Generic[Q]):
    """Units by priority, then round robin across keys, then oldest (see the module)."""

    __slots__ = ("_levels", "_size")

    def __init__(self, units: deque[Q] | None = None) -> None:
        self._levels: dict[int, _Level[Q]] = {}
        self._size = 0
        for unit in units or ():
            self.append(unit)

    def append(self, unit: Q) -> None:
        """Queue ``unit`` behind the others of its key (a new key joins the rotation last)."""
        priority = unit.order >> RANK_SHIFT
        level = self._levels.get(priority)
        if level is None:
            level = self._levels[priority] = _Level[Q]()
        units = level.keys.get(unit.flow_key)
        if units is None:
            units = level.keys[unit.flow_key] = deque()
        units.append(unit)
        self._size += 1

    def popleft(self) -> Q:
        """Take the next unit; raises IndexError when empty."""
        if not self._size:
            raise IndexError("pop from an empty FlowQueue")
        priority = min(self._levels)
        level = self._levels[priority]
        unit = level.pop()
        if not level.keys:
            del self._levels[priority]
        self._size -= 1
        return unit

    def __getitem__(self, index: int) -> Q:
        """``[0]``: the unit :meth:`popleft` would take."""
        if index != 0 or not self._size:
            raise IndexError(index)
        return self._levels[min(self._levels)].head()

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Q]:
        """Every queued unit (in no promised order: for counting and inspection)."""
        for level in self._levels.values():
            for units in level.keys.values():
                yield from units

    def __bool__(self) -> bool:
        return self._size > 0
