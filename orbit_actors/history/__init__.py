"""History: every event as a typed model, ``ExecutionState``, ``apply`` and ``replay`` (pure)."""

from .apply import HistoryError, apply, replay
from .events import (
    RUN_TIMEOUT_TIMER,
    TERMINAL_TYPES,
    EffectiveLimits,
    ErrorInfo,
    Event,
    ParentRef,
    event_from_json,
    event_to_dict,
    event_to_json,
    events_from_jsonl,
)
from .state import ExecutionState, StepRecord, Unit, UnitKey

__all__ = [
    "RUN_TIMEOUT_TIMER",
    "TERMINAL_TYPES",
    "EffectiveLimits",
    "ErrorInfo",
    "Event",
    "ExecutionState",
    "HistoryError",
    "ParentRef",
    "StepRecord",
    "Unit",
    "UnitKey",
    "apply",
    "event_from_json",
    "event_to_dict",
    "event_to_json",
    "events_from_jsonl",
    "replay",
]
